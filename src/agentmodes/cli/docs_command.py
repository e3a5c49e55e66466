"""`agentmodes docs list | show | rm`: the documents of a knowledge base.

A document is named by its id (from `docs list`), its path as ingested, or its name below
the folder it was ingested from; `show` prints its passages in reading order with their
heading paths (what a citation points at), `rm` deletes it with its chunks and vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from . import output
from .kb_commands import KB_HELP, kb_path
from .main import RUNTIME, app, fail

docs_app = typer.Typer(help="List, show and remove the documents of a knowledge base.",
                       no_args_is_help=True, rich_markup_mode=None)
app.add_typer(docs_app, name="docs")

_KB = typer.Option(None, "--kb", help=KB_HELP)
_JSON = typer.Option(False, "--json", help=output.JSON_HELP)
_DOC = typer.Argument(..., metavar="DOC", help="Document id, path or name (see docs list).")


def _open(kb: Optional[str]) -> Any:
    from ..knowledge.base import KnowledgeBase
    return KnowledgeBase.open(kb_path(kb), create=False)


def resolve(base: Any, ref: str) -> Any:
    """The document `ref` names, or a runtime error listing how to find it."""
    docs = base.documents()
    if ref.isdigit():
        found = [d for d in docs if d.id == int(ref)]
    else:
        absolute = str(Path(ref).expanduser().absolute())
        found = [d for d in docs if d.path in (ref, absolute)] or \
            [d for d in docs if d.name == ref]
    if not found:
        raise fail(f"no document {ref!r} in {base.location} (agentmodes docs list shows them)",
                   RUNTIME)
    if len(found) > 1:
        raise fail(f"{ref!r} names {len(found)} documents; use the id: "
                   + ", ".join(str(d.id) for d in found))
    return found[0]


@docs_app.command("list")
def list_documents(kb: Optional[str] = _KB, as_json: bool = _JSON) -> None:
    """List the documents: id, title, name, chunks, size and when they were ingested.

    \b
    Examples:
      agentmodes docs list --kb kb.db
      agentmodes docs list --kb kb.db --json | jq -r .path
    """
    from rich.table import Table

    from ..rich_tables import print_table

    with _open(kb) as base:
        docs = base.documents()
    if as_json:
        for doc in docs:
            output.emit("document", doc.as_dict())
        return
    if not docs:
        typer.echo("No documents. Add some with `agentmodes ingest PATH`.")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column, justify in (("id", "right"), ("title", "left"), ("name", "left"),
                            ("chunks", "right"), ("size", "right"), ("ingested", "left")):
        table.add_column(column, justify=justify)
    for doc in docs:
        table.add_row(str(doc.id), doc.title, doc.name, str(doc.chunks), _size(doc.size),
                      str(doc.ingested_at)[:19])
    print_table(table)


@docs_app.command("show")
def show(doc: str = _DOC, kb: Optional[str] = _KB, as_json: bool = _JSON) -> None:
    """Print a document's passages in reading order, each with its heading path.

    \b
    Examples:
      agentmodes docs show 3 --kb kb.db
      agentmodes docs show handbuch.md --kb kb.db --json
    """
    from ..knowledge.chunking import HEADING_SEPARATOR

    with _open(kb) as base:
        info = resolve(base, doc)
        passages = base.passages(info.id)
    if as_json:
        output.emit("document", info.as_dict())
        for passage in passages:
            output.emit("passage", passage.as_dict())
        return
    typer.echo(f"# {info.title}  ({info.path}, {info.chunks} chunks)")
    for passage in passages:
        where = HEADING_SEPARATOR.join(passage.heading_path) or info.title
        typer.echo(f"\n[{passage.position}] {where}  (chunk {passage.chunk_id})")
        typer.echo(passage.text)


@docs_app.command("rm")
def remove(docs: list[str] = typer.Argument(..., metavar="DOC...",
                                            help="Document ids, paths or names."),
           kb: Optional[str] = _KB, as_json: bool = _JSON,
           quiet: bool = output.QUIET_OPTION) -> None:
    """Remove documents (with their chunks and vectors) from the knowledge base.

    \b
    Examples:
      agentmodes docs rm 3 7 --kb kb.db
      agentmodes docs rm docs/old-price-list.pdf --kb kb.db
    """
    output.set_quiet(quiet)
    with _open(kb) as base:
        targets = [resolve(base, ref) for ref in docs]      # all found, or nothing removed
        for info in targets:
            base.remove_document(info.id)
            if as_json:
                output.emit("removed", info.as_dict())
            elif not output.quiet():
                typer.echo(f"removed {info.id} {info.name} ({info.chunks} chunks)", err=True)


def _size(size: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)
