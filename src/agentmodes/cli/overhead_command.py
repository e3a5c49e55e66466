"""`agentmodes bench overhead`: framework overhead per iteration against LangGraph,
smolagents and pydantic-ai (bench/overhead.py), written to overhead.json/.md under --out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..bench.results import results_dir, write_results
from . import output
from .bench_commands import wrote
from .bench_options import OUT_OPTION
from .main import bench_app, fail


@bench_app.command("overhead")
def overhead(
    iterations: int = typer.Option(20, "--iterations", help="Tool iterations per run."),
    runs: int = typer.Option(60, "--runs", help="Timed runs for agentmodes (peers: a third)."),
    out_dir: Optional[Path] = OUT_OPTION,
) -> None:
    """Framework overhead per agent iteration (fake model, trivial tool), side by side."""
    from rich.console import Console

    from ..bench.overhead import markdown, run_all

    if iterations < 1 or runs < 3:
        raise fail("--iterations must be >= 1 and --runs >= 3")
    err = Console(stderr=True)
    report = run_all(iterations, runs, progress=lambda name: output.quiet() or err.print(
        f"measuring {name} ..."))
    table = markdown(report)
    wrote(*write_results(results_dir(out_dir), "overhead", report, table))
    typer.echo(table)

