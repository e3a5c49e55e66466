"""Walk files and folders into the store, incrementally by content hash.

Per file: read, hash, compare with the stored hash (unchanged -> skip), extract, chunk, then
store the document and its chunks in ONE transaction. So a file is either fully in the KB or
not at all, and killing the process between two files loses nothing already stored.

"Removed" means: a file stored from inside a folder that is being ingested again and is no
longer there (or a file given by path that no longer exists but was stored before).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentModesError
from .backends import Backend
from .chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, chunk_blocks
from .extract import FORMAT_NAMES, UnreadableFile, extract, is_supported
from .types import IngestReport, SkippedFile

# progress(phase, done, total, label): phase is "read" while files are stored and "embed"
# while vectors are computed; `label` names the current file (read) or is "" (embed).
Progress = Callable[[str, int, int, str], None]

MAX_FILE_BYTES = 200 * 1024 * 1024


@dataclass(slots=True)
class ChunkingOptions:
    size: int = DEFAULT_CHUNK_SIZE        # characters
    overlap: int = DEFAULT_CHUNK_OVERLAP  # characters


@dataclass(slots=True)
class _Task:
    path: Path
    root: Path


def as_path_list(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def ingest_paths(store: Backend, paths: list[Path], *, chunking: ChunkingOptions | None = None,
                 progress: Progress | None = None, force: bool = False) -> IngestReport:
    """Store every supported file under `paths`; `force` re-extracts unchanged files too."""
    chunking = chunking or ChunkingOptions()
    report = IngestReport()
    tasks: list[_Task] = []
    folders: list[tuple[Path, set[str]]] = []
    for given in paths:
        path = Path(os.path.abspath(given.expanduser()))
        if not path.exists():
            _forget_missing(store, path, given, report)
        elif path.is_dir():
            found = _walk(path, report, _own_files(store))
            tasks.extend(_Task(f, path) for f in found)
            folders.append((path, {str(f) for f in found}))
        elif path.is_file():
            if is_supported(path):
                tasks.append(_Task(path, path.parent))
            else:
                report.skipped.append(SkippedFile(str(given), _unsupported(path)))
        else:
            report.skipped.append(SkippedFile(str(given), "not a regular file or folder"))

    seen: set[str] = set()
    for done, task in enumerate(tasks):
        if progress:
            progress("read", done, len(tasks), str(task.path))
        if str(task.path) in seen:  # the same file given twice (file and its folder)
            continue
        seen.add(str(task.path))
        _ingest_file(store, task, chunking, force, report)
    if progress:
        progress("read", len(tasks), len(tasks), "")

    for folder, present in folders:
        for row in store.documents_under(str(folder)):
            if row.path not in present and store.remove_document(row.path):
                report.removed.append(row.path)
    return report


def _forget_missing(store: Backend, path: Path, given: Path, report: IngestReport) -> None:
    """A path that is gone: delete what was stored from it, or report it as missing."""
    stored = store.document(str(path))
    rows = [stored] if stored else store.documents_under(str(path))
    if not rows:
        report.skipped.append(SkippedFile(str(given), "no such file or directory"))
    for row in rows:
        if store.remove_document(row.path):
            report.removed.append(row.path)


def _own_files(store: Backend) -> set[str]:
    """The KB's own files (the SQLite file, its companions and index files): a KB inside the
    folder is not a document."""
    return store.own_files()


def _walk(folder: Path, report: IngestReport, ignore: set[str]) -> list[Path]:
    """Supported files under `folder`, sorted; hidden files and folders are ignored."""
    found: list[Path] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and os.path.join(current, d) not in ignore)  # e.g. the KB's index
        for name in sorted(files):
            path = Path(current) / name
            if name.startswith(".") or str(path) in ignore:
                continue
            if is_supported(path):
                found.append(path)
            else:
                report.skipped.append(SkippedFile(str(path), _unsupported(path)))
    return found


def _unsupported(path: Path) -> str:
    return (f"unsupported file type '{path.suffix.lower() or 'no extension'}' "
            f"(supported: {FORMAT_NAMES})")


def _ingest_file(store: Backend, task: _Task, chunking: ChunkingOptions, force: bool,
                 report: IngestReport) -> None:
    key = str(task.path)
    try:
        stat = task.path.stat()
        if stat.st_size > MAX_FILE_BYTES:
            report.skipped.append(SkippedFile(key, f"larger than {MAX_FILE_BYTES >> 20} MB"))
            return
        data = task.path.read_bytes()
    except OSError as err:
        report.skipped.append(SkippedFile(key, f"cannot read: {err.strerror or err}"))
        return
    content_hash = hashlib.sha256(data).hexdigest()
    existing = store.document(key)
    if existing and existing.content_hash == content_hash and not force:
        report.unchanged.append(key)
        return
    try:
        extracted = extract(task.path, data)
        chunks = chunk_blocks(extracted.title, extracted.blocks, chunking.size, chunking.overlap)
    except UnreadableFile as err:
        _skip_and_drop_stale(store, key, str(err), existing is not None, report)
        return
    except AgentModesError:
        raise
    except Exception as err:  # noqa: BLE001 - one odd file must not stop the others
        reason = f"could not extract text ({type(err).__name__}: {str(err)[:120]})"
        _skip_and_drop_stale(store, key, reason, existing is not None, report)
        return
    status = store.replace_document(key, str(task.root), extracted.title, content_hash,
                                    stat.st_mtime, stat.st_size, chunks, force=force)
    if status == "added":
        report.added.append(key)
    elif status == "updated":
        report.updated.append(key)
    else:
        report.unchanged.append(key)
        return
    report.chunks_added += len(chunks)


def _skip_and_drop_stale(store: Backend, key: str, reason: str, was_stored: bool,
                         report: IngestReport) -> None:
    """An unreadable new version replaces nothing: the stale old text is removed, and said so."""
    if was_stored and store.remove_document(key):
        reason += "; its previous version was removed from the knowledge base"
    report.skipped.append(SkippedFile(key, reason))
