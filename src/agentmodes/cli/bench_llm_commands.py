"""LLM-driven benchmarks on the command line: code generation for `bench humaneval | mbpp`
(strategies simple, reflection, reflexion) and `bench hotpotqa` (act, react, reflact, and
Reflexion on top). Each run shows a progress bar, resumes from its JSONL run log in --out
(saying so; --fresh starts over), and writes JSON, a Markdown table and a PNG there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from . import output
from .bench_options import DATA_OPTION, FRESH_OPTION, OUT_OPTION
from .main import bench_app

LLM_HELP = "local (default, embedded model) | GGUF_PATH | openai:MODEL; default $AGENTMODES_LLM"


def llm_spec(spec: Optional[str]) -> str:
    return (spec or os.environ.get("AGENTMODES_LLM", "").strip() or "local").strip()


def effective_workers(spec: str, workers: int) -> int:
    """Parallel tasks only help (and are only safe) for HTTP backends: the embedded llama.cpp
    model is one process-wide instance that generates one reply at a time."""
    if workers > 1 and not spec.startswith("openai:"):
        Console(stderr=True).print(f"[dim]--workers {workers} ignored: {spec} runs in-process, "
                                   "one call at a time; tasks run sequentially[/]")
        return 1
    return max(1, workers)


def generate_code(benchmark: str, *, strategy: str, limit: Optional[int], llm: Optional[str],
                  workers: int, data: Optional[Path], json_out: bool, split: str = "test",
                  max_iterations: int = 2, trials: int = 3, out: Optional[Path] = None,
                  fresh: bool = False) -> None:
    from ..bench.codegen import CodegenSettings, parse_strategies, run_codegen
    from ..llm.registry import load_llm

    from ..bench.codedata import load_code_tasks

    strategies = parse_strategies(strategy)
    load_code_tasks(benchmark, data, split)      # a missing data folder fails before the model loads
    spec = llm_spec(llm)
    model = load_llm(spec)
    run = run_codegen(benchmark, model, llm_label=spec, strategies=strategies, limit=limit,
                      workers=effective_workers(spec, workers), data_dir=data, split=split,
                      settings=CodegenSettings(max_iterations=max_iterations, max_trials=trials),
                      show_progress=not (json_out or output.quiet()), out_dir=out, fresh=fresh)
    _finish(run.report, run.paths, json_out)


def _finish(report: Any, paths: dict[str, Path], json_out: bool) -> None:
    """The result: one JSON line, or the table on stdout and the files written on stderr."""
    from ..bench.llm_report import print_table

    if json_out:
        output.emit("result", benchmark=report.benchmark, meta=report.meta,
                    summary=report.rows, files={k: str(v) for k, v in paths.items()})
        return
    print_table(report)
    if not output.quiet():
        for kind, path in paths.items():
            Console(stderr=True).print(f"[dim]{kind}: {path}[/]")


@bench_app.command("hotpotqa")
def hotpotqa(
    modes: str = typer.Option("act,react,reflact", "--modes", help="Comma-separated agent modes."),
    reflexion: bool = typer.Option(False, "--reflexion", help="Also run each mode as the actor "
                                   "of Reflexion (exact match as evaluator)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="First N questions."),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    workers: int = typer.Option(1, "--workers", min=1, help="Questions in parallel (HTTP "
                                "backends only)."),
    max_iterations: int = typer.Option(5, "--max-iterations", min=1, max=50,
                                       help="agent_max_iterations (multihop: +2, at most 10)"),
    trials: int = typer.Option(3, "--trials", min=1, max=10, help="Reflexion trials."),
    data: Optional[Path] = DATA_OPTION,
    no_embed: bool = typer.Option(False, "--no-embed", help="Build the KB without vectors "
                                  "(lexical search only; no embedding model needed)."),
    json_out: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    out: Optional[Path] = OUT_OPTION,
    fresh: bool = FRESH_OPTION,
    setting: str = typer.Option("distractor", "--setting", help=(
        "distractor: the agent modes search a KB of all context paragraphs; gold-context: "
        "the supporting paragraphs are given, no search (the Reflexion paper's CoT (GT))")),
    strategy: Optional[str] = typer.Option(None, "--strategy", help=(
        "gold-context: cot and/or reflexion (chain-of-thought as Reflexion's actor), "
        "comma-separated; default both")),
) -> None:
    """HotpotQA distractor sample (100 questions): EM, F1 and cost per agent mode.

    \b
    Examples:
      agentmodes bench hotpotqa --modes act,react,reflact --limit 5
      agentmodes bench hotpotqa --reflexion --llm openai:gpt-4o-mini --workers 4
      agentmodes bench hotpotqa --setting gold-context --strategy cot,reflexion --limit 20
    """
    from ..bench.hotpotqa import load_questions, parse_variants, run_hotpotqa
    from ..bench.hotpotqa_gold import SETTINGS, parse_strategies, run_hotpotqa_gold
    from ..errors import ConfigError
    from ..llm.registry import load_llm

    if setting not in SETTINGS:
        raise ConfigError(f"unknown setting {setting!r}; use {', '.join(SETTINGS)}")
    if setting == "distractor" and strategy is not None:
        raise ConfigError("--strategy is for --setting gold-context; the distractor setting "
                          "takes --modes and --reflexion")
    # Usage errors first (exit 2, also without the data), then the data, then the model.
    if setting == "gold-context":
        strategies = parse_strategies(strategy or "cot,reflexion")
    else:
        variants = parse_variants(modes, reflexion)
    load_questions(data)                           # fail on bad data before the model loads
    if setting == "gold-context":
        spec = llm_spec(llm)
        report, paths = run_hotpotqa_gold(
            load_llm(spec), llm_label=spec, strategies=strategies, limit=limit,
            workers=effective_workers(spec, workers), data_dir=data, trials=trials,
            out_dir=out, fresh=fresh, show_progress=not (json_out or output.quiet()))
        _finish(report, paths, json_out)
        return
    spec = llm_spec(llm)
    model = load_llm(spec)
    report, paths = run_hotpotqa(model, llm_label=spec, variants=variants, limit=limit,
                                 workers=effective_workers(spec, workers), data_dir=data,
                                 max_iterations=max_iterations, trials=trials,
                                 embed=not no_embed, out_dir=out, fresh=fresh,
                                 show_progress=not (json_out or output.quiet()))
    _finish(report, paths, json_out)
