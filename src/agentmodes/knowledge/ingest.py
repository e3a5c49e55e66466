"""Walk files and folders into the store, incrementally by content hash.

Per file: read, hash, compare with the stored hash (unchanged -> skip), extract, chunk, then
store the document and its chunks. A file is either fully in the KB or not at all: files are
stored in batches (a backend with `batch()`: one transaction for up to BATCH_FILES files or
BATCH_CHUNKS chunks, or what arrived before extraction made it wait BATCH_WAIT_S), so a
kill loses at most the batch being written, and progress counts a file only once committed.

Extraction runs in worker processes with CPU-time and memory limits (extract_pool.py): a
document that would take hours, or all the memory, is skipped with its reason and the next
one goes on. The workers also chunk and analyse what they extracted (prepare.py), so this
process only reads, hashes and writes while the workers, one per core, do the rest; they
work up to READ_AHEAD documents ahead, so a batch being written does not idle them. A file name that is not UTF-8 and a folder that cannot be read are
skipped with a reason, never fatal, never silent.

"Removed" means: a file stored from inside a folder that is being ingested again and is no
longer there (or a file given by path that no longer exists but was stored before).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentModesError
from .backends import Backend
from .chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, chunk_blocks
from .extract import FORMAT_NAMES, Extracted, UnreadableFile, is_supported
from .extract_pool import shared_pool
from .file_reads import FileRead, read_ahead
from .prepare import Prepared, PrepareSpec
from .types import IngestReport, SkippedFile

# progress(phase, done, total, label): phase is "read" while files are stored and "embed"
# while vectors are computed; `label` names the current file (read) or is "" (embed).
Progress = Callable[[str, int, int, str], None]

MAX_FILE_BYTES = 200 * 1024 * 1024
BATCH_FILES, BATCH_CHUNKS, BATCH_WAIT_S = 200, 4_000, 0.25
READ_AHEAD = 256


@dataclass(slots=True)
class ChunkingOptions:
    size: int = DEFAULT_CHUNK_SIZE        # characters
    overlap: int = DEFAULT_CHUNK_OVERLAP  # characters


@dataclass(slots=True)
class _Task:
    path: Path
    root: Path


@dataclass(slots=True)
class _FilesDone:
    """"read" progress counts files finished (stored, skipped or unchanged), not files read
    ahead for the extraction workers: a caller that stops at "read N" has N files complete
    in the KB, as when files were read and stored one at a time."""
    progress: Progress | None
    total: int
    done: int = 0

    def report(self, label: str) -> None:
        if self.progress:
            self.progress("read", self.done, self.total, label)


@dataclass(slots=True)
class _Read:
    """A file read and found new or changed: what storing it needs besides its text."""
    task: _Task
    key: str
    stat: os.stat_result
    content_hash: str
    was_stored: bool


def as_path_list(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def ingest_paths(store: Backend, paths: list[Path], *, chunking: ChunkingOptions | None = None,
                 progress: Progress | None = None, force: bool = False,
                 language: str | None = None) -> IngestReport:
    """Store every supported file under `paths`; `force` re-extracts unchanged files too.
    `language`: the KB's analyser setting, so the workers analyse chunks as its index does."""
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
    unique = []
    for task in tasks:
        if str(task.path) not in seen:      # the same file given twice (file and its folder)
            seen.add(str(task.path))
            unique.append(task)
    counter = _FilesDone(progress, len(unique))
    changed = _read_changed(store, unique, force, report, counter)
    batched = hasattr(store, "batch")
    spec = PrepareSpec(chunking.size, chunking.overlap, language) if batched and language \
        else None
    writer = _BatchWriter(store, chunking, force, report, counter) if batched else None
    for read, extracted in shared_pool().map(changed, spec, ahead=READ_AHEAD if batched else 0,
                                             on_wait=writer.flush if writer else None):
        if writer:
            writer.add(read, extracted)
        else:
            counter.report(read.key)
            _store_file(store, read, extracted, chunking, force, report)
            counter.done += 1
    if writer:
        writer.flush()
    counter.report("")

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
    """Supported files under `folder`, sorted; hidden files and folders are ignored. A
    folder that cannot be read, and a name that is not UTF-8 (it could not be stored or
    shown), are reported as skipped."""
    def unreadable(err: OSError) -> None:
        report.skipped.append(SkippedFile(shown(err.filename or folder),
                                          f"cannot read folder: {err.strerror or err}"))

    found: list[Path] = []
    for current, dirs, files in os.walk(folder, onerror=unreadable):
        kept = []
        for name in sorted(dirs):
            path = os.path.join(current, name)
            if name.startswith(".") or path in ignore:      # e.g. the KB's index
                continue
            if _bad_name(path, report):
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(current) / name
            if name.startswith(".") or str(path) in ignore or _bad_name(str(path), report):
                continue
            if is_supported(path):
                found.append(path)
            else:
                report.skipped.append(SkippedFile(str(path), _unsupported(path)))
    return found


def shown(path: str | os.PathLike) -> str:
    """A path as text a report can hold: bytes that are not UTF-8 become U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def _bad_name(path: str, report: IngestReport) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        report.skipped.append(SkippedFile(shown(path), "file name is not valid UTF-8 (rename "
                                                       "it to ingest it)"))
        return True
    return False


def _unsupported(path: Path) -> str:
    return (f"unsupported file type '{path.suffix.lower() or 'no extension'}' "
            f"(supported: {FORMAT_NAMES})")


def _read_changed(store: Backend, tasks: list[_Task], force: bool, report: IngestReport,
                  counter: _FilesDone) -> Iterator[tuple[_Read, Path, bytes]]:
    """Read each file (a thread reads ahead, file_reads.py); report the unreadable, too
    large and unchanged ones (each counted done); yield the rest (with their bytes) for
    extraction."""
    files = read_ahead([task.path for task in tasks], MAX_FILE_BYTES)
    try:
        for task, file in zip(tasks, files):
            key = str(task.path)
            read = _changed(store, task, key, file, force, report)
            if read is None:
                counter.report(key)
                counter.done += 1
            else:
                yield read
    finally:
        files.close()  # an ingest that stops early stops the reading thread too


def _changed(store: Backend, task: _Task, key: str, file: FileRead, force: bool,
             report: IngestReport) -> tuple[_Read, Path, bytes] | None:
    """The file's bytes for extraction, or None (reported) if unreadable, too large or
    unchanged."""
    if file.skipped is not None:
        report.skipped.append(SkippedFile(key, file.skipped))
        return None
    existing = store.document(key)
    if existing and existing.content_hash == file.content_hash and not force:
        report.unchanged.append(key)
        return None
    return _Read(task, key, file.stat, file.content_hash, existing is not None), task.path, \
        file.data


class _BatchWriter:
    """Collects extracted documents and stores them a batch per transaction (module doc)."""

    def __init__(self, store: Backend, chunking: ChunkingOptions, force: bool,
                 report: IngestReport, counter: _FilesDone) -> None:
        self.store, self.chunking, self.force = store, chunking, force
        self.report, self.counter = report, counter
        self.pending: list[tuple[_Read, Extracted | Prepared | UnreadableFile]] = []
        self.chunks = 0

    def add(self, read: _Read, extracted: Extracted | Prepared | UnreadableFile) -> None:
        self.pending.append((read, extracted))
        self.chunks += len(extracted.rows) if isinstance(extracted, Prepared) else 1
        if len(self.pending) >= BATCH_FILES or self.chunks >= BATCH_CHUNKS:
            self.flush()

    def flush(self) -> None:
        """Store what is pending in one transaction, then count those files done."""
        if not self.pending:
            return
        pending, self.pending, self.chunks = self.pending, [], 0
        with self.store.batch():
            for read, extracted in pending:
                _store_file(self.store, read, extracted, self.chunking, self.force, self.report)
        for read, _ in pending:            # "read N": N files are committed
            self.counter.done += 1
            self.counter.report(read.key)


def _store_file(store: Backend, read: _Read, extracted: Extracted | Prepared | UnreadableFile,
                chunking: ChunkingOptions, force: bool, report: IngestReport) -> None:
    key = read.key
    if isinstance(extracted, UnreadableFile):
        _skip_and_drop_stale(store, key, str(extracted), read.was_stored, report)
        return
    extra: dict = {}
    if isinstance(extracted, Prepared):     # chunked and analysed by the worker
        chunks: list = extracted.rows
        extra = {"rows": extracted.rows,
                 "analysed": (extracted.signature, extracted.analysed)}
    else:
        try:
            chunks = chunk_blocks(extracted.title, extracted.blocks, chunking.size,
                                  chunking.overlap)
        except AgentModesError:
            raise
        except Exception as err:  # noqa: BLE001 - one odd file must not stop the others
            reason = f"could not split into chunks ({type(err).__name__}: {str(err)[:120]})"
            _skip_and_drop_stale(store, key, reason, read.was_stored, report)
            return
    status = store.replace_document(key, str(read.task.root), extracted.title,
                                    read.content_hash, read.stat.st_mtime, read.stat.st_size,
                                    chunks, force=force, **extra)
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
