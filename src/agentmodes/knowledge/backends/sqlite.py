"""The knowledge base's one SQLite file: schema and every query against it.

stdlib sqlite3 rather than SQLAlchemy: the KB is always a local file, its queries are few
and fixed, and vector blobs move faster without an ORM layer in between.

Tables
- meta        key/value: app marker, schema version, embedder name + dim, chunk size and
              overlap, revision
- documents   one row per ingested file: path, root it was ingested under, title, content
              hash, mtime, size
- chunks      one row per chunk: document, position, title, heading path (JSON), body text,
              hash of the indexed text (the embedding cache key)
- embeddings  (embedder, text hash) -> float32 blob. Keyed by text, not by chunk, so that
              re-ingesting or moving unchanged text never embeds it again.
- removed_chunks, vector_log: the change log persisted indexes replay (sqlite_schema.py)

The search indexes live beside the file in `<file>.index/` (sqlite_index.py).

`revision` in meta is bumped by every write; an open KnowledgeBase compares it to decide
whether its in-memory search index is stale, also when another process wrote the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from ...errors import KnowledgeBaseError
from ...private_files import create_private_file, private_dir
from ..chunking import Chunk
from ..prepare import chunk_rows
from . import sqlite_schema as schema
from . import sqlite_vectors as bookkeeping
from .sqlite_index import PersistedIndex
from .rows import ChunkRow, DocumentRow

if TYPE_CHECKING:
    from ..embedders import Embedder

APP_MARKER = "agentmodes-kb"
SQLITE_HEADER = b"SQLite format 3\x00"


def _locked_message(path: Path) -> str:
    return (f"knowledge base {path} is locked by another writer (an ingest still running?); "
            "try again when it has finished")


class SQLiteBackend:
    """One connection to one KB file, safe to share between threads (calls are serialised)."""

    # A deleted or replaced document's vectors go in its own transaction (sqlite_vectors.py),
    # so KnowledgeBase need not sweep every vector after an ingest.
    prunes_vectors_on_delete = True

    def __init__(self, path: Path, *, create: bool = True, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.location = str(path)
        _check_file(path, create)
        try:
            self._conn = sqlite3.connect(str(path), timeout=busy_timeout,
                                         isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            raise KnowledgeBaseError(f"cannot open knowledge base {path}: {err}") from None
        self._lock = threading.RLock()
        self._batch: dict | None = None     # term keys of the open batch's chunks
        self._analysed: dict[int, tuple] = {}  # ... of committed chunks the index has not read
        try:
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            # up to 64 MB of pages (allocated as used): an ingest's inserts into the text-hash
            # index and the chunks table stop re-reading pages from the OS at 100k+ chunks
            self._conn.execute("PRAGMA cache_size=-65536")
            self._init_schema()
        except sqlite3.DatabaseError as err:
            self._conn.close()
            if "locked" in str(err) or "busy" in str(err):
                raise KnowledgeBaseError(_locked_message(path)) from None
            raise KnowledgeBaseError(f"{path} is not an agentmodes knowledge base or is damaged "
                                     f"({err})") from None

    def _init_schema(self) -> None:
        tables = {row[0] for row in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise KnowledgeBaseError(
                f"{self.path} is an SQLite database but not an agentmodes knowledge base")
        if "meta" in tables:
            marker = self.get_meta("app")
            if marker != APP_MARKER:
                raise KnowledgeBaseError(
                    f"{self.path} is an SQLite database but not an agentmodes knowledge base")
            version = int(self.get_meta("schema_version") or 0)
            if version > schema.SCHEMA_VERSION:
                raise KnowledgeBaseError(
                    f"{self.path} was written by a newer agentmodes (schema {version}); upgrade "
                    "agentmodes to open it")
            if version < schema.SCHEMA_VERSION:
                self._upgrade(version)
            return
        with self.transaction():
            if self._conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone():
                return  # another process created it while we waited for the write lock
            schema.create(self._conn)
            self._set_meta("app", APP_MARKER)
            self._set_meta("schema_version", str(schema.SCHEMA_VERSION))
            self._set_meta("revision", "0")

    def _upgrade(self, version: int) -> None:
        """Bring an older file to this schema in place (sqlite_schema.py says what changes)."""
        with self.transaction():
            # re-read inside the write lock: another process may have upgraded it meanwhile
            if int(self.get_meta("schema_version") or 0) != version:
                return
            if version != 1:
                raise KnowledgeBaseError(f"{self.path} has an unknown schema version {version}")
            schema.upgrade_from_1(self._conn)
            self._set_meta("schema_version", str(schema.SCHEMA_VERSION))
            self._bump_revision()

    # --- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so a second writer waits
        (busy timeout) instead of failing half-way, and a kill leaves the previous state.
        Inside `batch()` it joins the batch's transaction."""
        with self._lock:
            if self._batch is not None:
                yield self._conn
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as err:
                raise self._error(err) from None
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as err:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(err, sqlite3.DatabaseError):
                    raise self._error(err) from None
                raise

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes (an ingest's next documents) in ONE transaction: a commit per file was
        a third of the cost of storing small files. All or none of the batch is stored, so a
        kill loses at most the batch being written, never a committed one; the term keys
        handed over with its chunks reach the index only once it is committed."""
        with self._lock, self.transaction():
            self._batch = {}
            try:
                yield
                analysed = self._batch
            finally:
                self._batch = None
        self._analysed.update(analysed)

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as err:
                raise self._error(err) from None

    def _error(self, err: sqlite3.DatabaseError) -> KnowledgeBaseError:
        """SQLite's errors as one line a user can act on (locked, damaged, disk full)."""
        text = str(err)
        if "locked" in text or "busy" in text:
            return KnowledgeBaseError(_locked_message(self.path))
        if "malformed" in text or "not a database" in text:
            return KnowledgeBaseError(f"knowledge base {self.path} is damaged ({text}); "
                                      "restore it from a backup or delete it and ingest again")
        return KnowledgeBaseError(f"knowledge base {self.path}: {text}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def own_files(self) -> set[str]:
        """The KB file and SQLite's companions: a KB inside an ingested folder is no document."""
        base = os.path.abspath(self.path)
        return {base, base + "-wal", base + "-shm", base + "-journal", base + ".index"}

    def size_bytes(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def search_index(self, load_embedder: Callable[[], Embedder],
                     language: str) -> PersistedIndex:
        """The index saved beside the file in `<file>.index/` (sqlite_index.py)."""
        return PersistedIndex(self, load_embedder, language)

    def prune_change_log(self, removed_seq: int, vector_seq: int) -> None:
        """Forget change-log entries a saved index already contains."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM removed_chunks WHERE seq <= ?", (removed_seq,))
            conn.execute("DELETE FROM vector_log WHERE seq <= ?", (vector_seq,))

    # --- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO "
                           "UPDATE SET value=excluded.value", (key, value))

    def _bump_revision(self) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                           "WHERE key='revision'")

    def revision(self) -> int:
        return int(self.get_meta("revision") or 0)

    def set_embedder(self, name: str | None, dim: int | None) -> None:
        with self.transaction():
            if name is None:
                self._conn.execute("DELETE FROM meta WHERE key IN ('embedder', 'embedder_dim')")
            else:
                self._set_meta("embedder", name)
                self._set_meta("embedder_dim", str(dim or 0))
            self._bump_revision()

    def set_chunking(self, size: int, overlap: int) -> None:
        """Remember the chunking, so the next open chunks changed files the same way."""
        if self.get_meta("chunk_size") == str(size) and self.get_meta("chunk_overlap") == str(overlap):
            return
        with self.transaction():
            self._set_meta("chunk_size", str(size))
            self._set_meta("chunk_overlap", str(overlap))

    # --- documents ----------------------------------------------------------------------

    def document(self, path: str) -> DocumentRow | None:
        rows = self._query("SELECT id, path, root, title, content_hash, mtime, size "
                           "FROM documents WHERE path=?", (path,))
        return DocumentRow(*rows[0]) if rows else None

    def documents_under(self, folder: str) -> list[DocumentRow]:
        """Documents whose path lies inside `folder` (an absolute path without trailing sep)."""
        prefix = folder.rstrip("/\\") + "/"
        # A range on the path index (paths starting with "<folder>/" sort between it and
        # "<folder>0", '0' following '/'): substr() alone scanned every document, once per
        # folder of an ingest, 15 s of a 1M-chunk ingest of 1,000 folders.
        rows = self._query("SELECT id, path, root, title, content_hash, mtime, size FROM "
                           "documents WHERE path >= ? AND path < ? AND substr(path, 1, ?) = ? "
                           "ORDER BY path", (prefix, prefix[:-1] + "0", len(prefix), prefix))
        return [DocumentRow(*row) for row in rows]

    def replace_document(self, path: str, root: str, title: str, content_hash: str,
                         mtime: float, size: int, chunks: list[Chunk], force: bool = False, *,
                         rows: list[tuple] | None = None,
                         analysed: tuple[tuple, list] | None = None) -> str:
        """Store a document and its chunks in one transaction; returns added/updated/unchanged.

        The hash is compared again inside the write transaction, so two concurrent ingests of
        the same file cannot both insert it. `rows`: the chunks already as table rows
        (prepare.chunk_rows; `chunks` is then ignored); `analysed`: (analyser signature,
        per-chunk term keys) made by the extraction worker (prepare.py), kept for the index
        if this runs inside `batch()`.
        """
        with self.transaction() as conn:
            row = conn.execute("SELECT id, content_hash FROM documents WHERE path=?",
                               (path,)).fetchone()
            if row and row[1] == content_hash and not force:
                conn.execute("UPDATE documents SET mtime=?, size=? WHERE id=?", (mtime, size, row[0]))
                return "unchanged"
            old_hashes = bookkeeping.hashes_of_document(conn, row[0]) if row else []
            if row:
                conn.execute("DELETE FROM documents WHERE id=?", (row[0],))
            cursor = conn.execute(
                "INSERT INTO documents(path, root, title, content_hash, mtime, size) "
                "VALUES(?, ?, ?, ?, ?, ?)", (path, root, title, content_hash, mtime, size))
            doc_id = cursor.lastrowid
            conn.executemany(
                "INSERT INTO chunks(doc_id, position, title, heading_path, text, text_hash) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                [(doc_id, *r) for r in (chunk_rows(chunks) if rows is None else rows)])
            if analysed is not None and self._batch is not None:
                ids = conn.execute("SELECT id FROM chunks WHERE doc_id=? ORDER BY position",
                                   (doc_id,)).fetchall()
                signature, keys = analysed
                self._batch.update((chunk_id, (signature, k)) for (chunk_id,), k in zip(ids, keys))
            bookkeeping.prune_hashes(conn, old_hashes)
            self._bump_revision()
            return "updated" if row else "added"  # forced re-extraction counts as updated

    def take_analysis(self, ids: list[int], signature: tuple) -> list:
        """The term keys handed over for these chunks (None where there are none, or made by
        an analyser with other settings); forgets every handed-over chunk up to max(ids)."""
        with self._lock:
            if not self._analysed:
                return [None] * len(ids)
            pending = self._analysed
            found = [pending.pop(i, None) for i in ids]
            last, stale = max(ids), []
            for chunk_id in pending:        # committed in id order: the stale ones come first
                if chunk_id > last:
                    break
                stale.append(chunk_id)      # deleted before the index read it
            for chunk_id in stale:
                del pending[chunk_id]
        return [f[1] if f is not None and f[0] == signature else None for f in found]

    def remove_document(self, path: str) -> bool:
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM documents WHERE path=?", (path,)).fetchone()
            if row is None:
                return False
            old_hashes = bookkeeping.hashes_of_document(conn, row[0])
            deleted = conn.execute("DELETE FROM documents WHERE id=?", (row[0],)).rowcount
            bookkeeping.prune_hashes(conn, old_hashes)
            if deleted:
                self._bump_revision()
            return bool(deleted)

    def list_documents(self, doc_id: int | None = None) -> list[tuple[DocumentRow, int, str]]:
        """Documents (all, or the one `doc_id`) with chunk count and ingest time, by path."""
        where, params = ("WHERE d.id=? ", (doc_id,)) if doc_id is not None else ("", ())
        rows = self._query(
            "SELECT d.id, d.path, d.root, d.title, d.content_hash, d.mtime, d.size, "
            "COUNT(c.id), d.ingested_at FROM documents d LEFT JOIN chunks c ON c.doc_id = d.id "
            f"{where}GROUP BY d.id ORDER BY d.path", params)
        return [(DocumentRow(*row[:7]), row[7], row[8]) for row in rows]

    def chunks_of(self, doc_id: int, offset: int = 0, limit: int = -1) -> list[ChunkRow]:
        """A document's chunks in reading order (`limit` -1: all from `offset`)."""
        rows = self._query(
            "SELECT c.id, c.doc_id, c.position, c.title, c.heading_path, c.text, c.text_hash, "
            "d.path FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.doc_id=? "
            "ORDER BY c.position LIMIT ? OFFSET ?", (doc_id, limit, offset))
        return [_chunk_row(row) for row in rows]

    # --- chunks -------------------------------------------------------------------------

    def chunk_keys(self) -> dict[int, str]:
        """chunk id -> text hash for every chunk: what an in-memory index must contain."""
        return dict(self._query("SELECT id, text_hash FROM chunks"))

    def chunks_by_id(self, ids: list[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for part in schema.batches(ids):
            marks = ",".join("?" * len(part))
            for row in self._query(
                    "SELECT c.id, c.doc_id, c.position, c.title, c.heading_path, c.text, "
                    "c.text_hash, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id "
                    f"WHERE c.id IN ({marks})", tuple(part)):
                out[row[0]] = _chunk_row(row)
        return out

    # --- embeddings ---------------------------------------------------------------------

    def pending_texts(self, embedder: str) -> list[tuple[str, int]]:
        """(text hash, one chunk id carrying it) for every indexed text without a vector
        (only chunks above the embedded watermark are looked at: sqlite_vectors.py)."""
        with self.transaction() as conn:
            bookkeeping.advance(conn, embedder)
            return bookkeeping.pending_texts(conn, embedder)

    def count_pending(self, embedder: str | None) -> int:
        if embedder is None:
            return self._query("SELECT COUNT(*) FROM chunks")[0][0]
        with self._lock:
            try:
                return bookkeeping.count_pending(self._conn, embedder)
            except sqlite3.DatabaseError as err:
                raise self._error(err) from None

    def put_vectors(self, embedder: str, hashes: list[str], vectors: np.ndarray) -> None:
        blobs = [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors]
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO embeddings(embedder, text_hash, vector) "
                             "VALUES(?, ?, ?)", [(embedder, h, b) for h, b in zip(hashes, blobs)])
            bookkeeping.advance(conn, embedder)
            self._bump_revision()

    def vector_keys(self, embedder: str) -> dict[int, str]:
        """chunk id -> text hash for every chunk that has a vector from `embedder`."""
        return dict(self._query(
            "SELECT c.id, c.text_hash FROM chunks c JOIN embeddings e ON e.embedder = ? AND "
            "e.text_hash = c.text_hash", (embedder,)))

    def chunk_vectors(self, embedder: str, ids: list[int]) -> tuple[list[int], np.ndarray]:
        """The vectors of the given chunks (those that have one), as (ids, float32 matrix).

        Many ids are fetched with ONE join over all chunks, filtered here: SQLite plans
        `c.id IN (900 ids)` joined to embeddings as a scan of every embedding per batch, which
        made the first search at 100k chunks quadratic (14 CPU-s per batch)."""
        if len(ids) > 900:
            wanted = set(ids)
            rows = [row for row in self._query(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embedder = ? AND "
                "e.text_hash = c.text_hash", (embedder,)) if row[0] in wanted]
        else:
            marks = ",".join("?" * len(ids))
            rows = self._query(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embedder = ? AND "
                f"e.text_hash = c.text_hash WHERE c.id IN ({marks})", (embedder, *ids))
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        return [chunk_id for chunk_id, _ in rows], matrix.reshape(len(rows), -1).copy()

    def prune_vectors(self) -> int:
        """Forget vectors whose text no chunk has any more (edited or deleted text), so the
        file does not grow with every edit; text still in use keeps its cached vector.
        A full sweep: deletes prune their own vectors already (prunes_vectors_on_delete), this
        catches what files written by older versions left behind."""
        with self.transaction() as conn:
            return conn.execute("DELETE FROM embeddings WHERE text_hash NOT IN "
                                "(SELECT text_hash FROM chunks)").rowcount

    def drop_vectors_except(self, embedder: str | None) -> None:
        """Forget vectors of other embedders (after a re-index they can never be used)."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings WHERE embedder IS NOT ?", (embedder,))
            bookkeeping.forget_other_watermarks(conn, embedder)
            self._bump_revision()

    # --- statistics and integrity -------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return {
            "documents": self._query("SELECT COUNT(*) FROM documents")[0][0],
            "chunks": self._query("SELECT COUNT(*) FROM chunks")[0][0],
            "vectors": self._query("SELECT COUNT(*) FROM embeddings")[0][0],
        }

    def integrity_problems(self) -> list[str]:
        """SQLite's own check plus ours: no chunk without document, no document without chunks."""
        problems = [row[0] for row in self._query("PRAGMA integrity_check") if row[0] != "ok"]
        orphans = self._query("SELECT COUNT(*) FROM chunks WHERE doc_id NOT IN "
                              "(SELECT id FROM documents)")[0][0]
        if orphans:
            problems.append(f"{orphans} chunks without a document")
        empty = self._query("SELECT COUNT(*) FROM documents WHERE id NOT IN "
                            "(SELECT doc_id FROM chunks)")[0][0]
        if empty:
            problems.append(f"{empty} documents without chunks")
        return problems


def _chunk_row(row: tuple) -> ChunkRow:
    return ChunkRow(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], row[7])


def _check_file(path: Path, create: bool) -> None:
    """Refuse what can never be a KB before SQLite gets to it (it would happily 'open' any
    file and fail later with 'file is not a database')."""
    if path.is_dir():
        raise KnowledgeBaseError(f"{path} is a directory, not a knowledge base file")
    if not path.exists():
        if not create:
            raise KnowledgeBaseError(
                f"no knowledge base at {path}; create one with `agentmodes ingest PATH --kb {path}`")
        try:
            private_dir(path.parent)
            create_private_file(path)       # owner-only: chunk text is the user's data
        except OSError as err:
            raise KnowledgeBaseError(f"cannot create knowledge base {path}: {err.strerror}") from None
        return
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as err:
        raise KnowledgeBaseError(f"cannot read knowledge base {path}: {err.strerror}") from None
    if header and header != SQLITE_HEADER:
        raise KnowledgeBaseError(f"{path} is not an agentmodes knowledge base (not an SQLite file)")
