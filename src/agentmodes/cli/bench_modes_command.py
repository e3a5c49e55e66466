"""`agentmodes bench modes`: the comparison of `agentmodes compare` on QA sets with gold
answers, one or more models, written beside the seeds' own figures (bench/modes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import output
from .bench_options import DATA_OPTION, FRESH_OPTION, OUT_OPTION
from .compare_command import DEFAULT_MODES
from .main import bench_app


@bench_app.command("modes")
def bench_modes(
    datasets: str = typer.Option("hotpotqa,xquad-en", "--datasets", help=(
        "Comma-separated: hotpotqa (distractor sample, multihop), xquad-en (lookup).")),
    modes: str = typer.Option(DEFAULT_MODES, "--modes", help="Comma-separated modes."),
    reflection: int = typer.Option(1, "--reflection", min=0, max=3, help=(
        "Reflection rounds on top of each mode's answer (0: none).")),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help=(
        "Questions per dataset, spread evenly over it (default: all).")),
    llm: Optional[list[str]] = typer.Option(None, "--llm", help=(
        "Model(s) to measure; repeat for several (e.g. --llm local --llm openai:MODEL). "
        "Default $AGENTMODES_LLM, else the embedded model.")),
    workers: int = typer.Option(1, "--workers", min=1, help=(
        "Questions at once for openai: models (the embedded model runs one at a time).")),
    max_iterations: int = typer.Option(5, "--max-iterations", min=1, max=50,
                                       help="agent_max_iterations (multihop: +2, at most 10)."),
    data: Optional[Path] = DATA_OPTION,
    out: Optional[Path] = OUT_OPTION,
    fresh: bool = FRESH_OPTION,
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
) -> None:
    """The seeds' mode comparison tables (tokens per step, iterations, calls, time, quality,
    Reflection on top), measured, with the seeds' own figures beside them.

    \b
    Examples:
      agentmodes bench modes --limit 10
      agentmodes bench modes --datasets xquad-en --llm local --llm openai:smollm2 --limit 10
    """
    from ..bench.answer_data import DATASETS, load_qa
    from ..bench.modes import SEED_FIGURES, measured_rows, run_modes
    from ..bench.runs import parse_names
    from ..llm.registry import load_llm
    from .bench_llm_commands import effective_workers, llm_spec

    names = parse_names(datasets, DATASETS, "dataset")          # usage errors first
    chosen = parse_names(modes, ("act", "react", "reflact", "plan-and-solve"), "mode")
    for name in names:
        load_qa(name, data)                   # missing data fails before a model loads
    specs = list(dict.fromkeys(llm_spec(s) for s in (llm or [None])))
    models = [(spec, load_llm(spec), effective_workers(spec, workers)) for spec in specs]
    results, paths = run_modes(models, datasets=names, modes=chosen, reflection=reflection,
                               limit=limit, max_iterations=max_iterations, data_dir=data,
                               out_dir=out, fresh=fresh,
                               show_progress=not (as_json or output.quiet()))
    if as_json:
        output.emit("result", benchmark="modes", seeds=SEED_FIGURES,
                    results=[{k: v for k, v in r.items() if k != "rows"} for r in results],
                    files={k: str(v) for k, v in paths.items()})
        return
    from rich.console import Console
    from rich.table import Table

    from ..rich_tables import print_table

    for result in results:
        table = Table(title=f"{result['dataset']} · {result['llm']} · "
                            f"{result['questions']} questions", title_justify="left")
        table.add_column("aspect", no_wrap=True)
        for s in result["summary"]:
            table.add_column(s["variant"], justify="right", no_wrap=True)
        table.add_column("the seed says")
        for row in measured_rows(result, chosen):
            table.add_row(*row)
        print_table(table)
    if not output.quiet():
        for kind, path in paths.items():
            Console(stderr=True).print(f"[dim]{kind}: {path}[/]")
