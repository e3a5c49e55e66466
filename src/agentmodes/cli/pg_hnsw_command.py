"""`agentmodes bench pg-hnsw`: exact vector scans vs HNSW on PostgreSQL (bench/pg_hnsw.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from . import output
from .bench_commands import _scale_sizes, wrote
from .bench_options import DATA_OPTION, OUT_OPTION
from .main import bench_app


@bench_app.command("pg-hnsw")
def pg_hnsw(
    sizes: str = typer.Option("1000,5000,10000,20000,50000,100000", "--sizes",
                              help="Comma-separated vector counts."),
    out: Optional[Path] = OUT_OPTION,
    work: Optional[Path] = typer.Option(None, "--work", help="bench scale's --work folder "
                                        "(its corpus text is reused)."),
    data: Optional[Path] = DATA_OPTION,
    queries: int = typer.Option(100, "--queries", min=10, help="Queries per size."),
    pg_url: Optional[str] = typer.Option(None, "--pg-url",
                                         help="PostgreSQL database to measure in (default: "
                                              "a throw-away local server)."),
) -> None:
    """Where pgvector's HNSW index beats an exact scan: p50, buffers, recall@10, build."""
    from ..bench.pg_hnsw import run_pg_hnsw
    from ..bench.pg_hnsw_report import print_report
    from ..bench.results import results_dir
    from ..bench.scale import default_work_dir

    out = results_dir(out)
    err = Console(stderr=True)
    results = run_pg_hnsw(_scale_sizes(sizes), Path(work or default_work_dir()), pg_url,
                          queries, data, out,
                          progress=(lambda *_: None) if output.quiet() else err.log)
    print_report(results, Console())
    wrote(out / "pg_hnsw.json", out / "pg_hnsw.md")
