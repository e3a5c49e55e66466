"""`agentmodes bench formats`: the format readers against markitdown (bench/formats.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..bench.results import results_dir
from .bench_commands import wrote
from .bench_options import OUT_OPTION
from .main import bench_app


@bench_app.command("formats")
def formats(out_dir: Optional[Path] = OUT_OPTION) -> None:
    """Our docx/pptx/xlsx/epub/csv readers against markitdown on the same files."""
    from ..bench.formats import run_formats

    report, table = run_formats(out_dir)
    wrote(results_dir(out_dir) / "formats.json", results_dir(out_dir) / "formats.md")
    typer.echo(table)
