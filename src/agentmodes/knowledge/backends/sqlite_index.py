"""The SQLite backend's persisted search index: saved beside the file, replayed incrementally.

Opening a KB maps the saved index (index_files.py lists the files) and replays only what the
file gained since it was saved, read from the change log (sqlite_schema.py): chunks with a
higher id are analysed and added, removed chunks are marked dead, vectors stored since are
added. Nothing already saved is analysed or embedded again, so opening costs the same at 1k
chunks as at 1M, plus the replay of whatever changed since the last save.

`checkpoint()` saves: the writer (an ingest) calls it every few seconds while it works and at
the end; a reader that had to replay a lot (a killed ingest, or a KB from an older version,
which has no saved index at all) saves it too, so the repair happens once. Saving is
serialised between processes by a lock on the index folder and never blocks readers; a
process that sees a newer manifest reloads from it.

Why the index is files beside the KB rather than tables inside it (measured,
benchmarks/results/index_candidates.md): query-time access must be zero-copy numpy arrays
(posting lists, the vector matrix); BLOBs read through sqlite3 are copied, and reading 1M
vectors that way alone takes seconds. SQLite keeps what must be transactional (documents,
chunks, vectors, the change log); the index files are derived from it and can always be
rebuilt from it, which is what happens when they are missing, stale or damaged.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunking import index_text
from ..live_index import LazyEmbedder
from ..postings import Segment
from ..prepare import analyzer_signature, keys_array
from . import index_files as files
from .index_files import graphs_of
from .sqlite_schema import batches

if TYPE_CHECKING:
    from ..embedders import Embedder
    from .sqlite import SQLiteBackend

log = logging.getLogger(__name__)

REPLAY_SAVE_ROWS = 2_000   # a reader that replayed at least this many chunks saves the index
SAVE_EVERY_S = 10.0        # an ingest saves at most this often while it runs
COMPACT_DEAD = 0.25        # rewrite the rows when this share of them is dead
BATCH = 5_000


class PersistedIndex:
    """SearchIndex of an SQLite KB, saved in `<file>.index/`."""

    def __init__(self, backend: "SQLiteBackend", load_embedder: Callable[[], "Embedder"],
                 language: str) -> None:
        self._backend = backend
        self.folder = Path(str(backend.path) + ".index")
        self._load_embedder = load_embedder
        self._language = language
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._searcher: Any = None
        self._manifest: dict = {}
        self._revision = -1
        self._replayed = 0                 # chunks replayed since the manifest was loaded
        self._rebuilt = False              # no usable saved index: everything was replayed
        self._saved_at = time.monotonic()

    # -- SearchIndex ---------------------------------------------------------------------

    @property
    def chunk_count(self) -> int:
        return len(self._searcher) if self._searcher is not None else 0

    @property
    def vector_count(self) -> int:
        return len(self._searcher.dense) if self._searcher is not None else 0

    def searcher(self) -> Any:
        revision = self._backend.revision()  # read before the rows: a later write re-syncs
        with self._lock:
            if self._searcher is not None and revision == self._revision:
                return self._searcher
            self._sync()
            self._revision = revision
            if self._replayed >= REPLAY_SAVE_ROWS or (self._rebuilt and self._replayed) or \
                    self._lacks_half():
                # Repair once, not in every process that opens it; a search process builds
                # approximate graphs only when nothing usable was saved (index_save.py).
                try:
                    self._save_locked(wait=0.0, build_graphs=self._rebuilt)
                except OSError as err:  # e.g. a read-only copy: search what is in memory
                    log.warning("could not save the index of %s: %s", self._backend.path, err)
            return self._searcher

    def checkpoint(self, wait: float = 5.0, *, due: bool = False) -> bool:
        """Save what the KB gained since the saved index (True if saved or nothing to do).
        `due=True`: only if the last save is SAVE_EVERY_S old (called during an ingest)."""
        if due and time.monotonic() - self._saved_at < SAVE_EVERY_S:
            return True
        # Saves during an ingest leave approximate graphs to the one at its end (index_save.py)
        return self._save_locked(wait, build_graphs=not due)

    def _save_locked(self, wait: float, build_graphs: bool) -> bool:
        with self._lock, files.writer_lock(self.folder, wait) as locked:
            if not locked:
                return False  # another process is saving; it includes our rows
            self._sync()
            if self._unsaved() or (build_graphs and self._graphs_due()):
                self._save(build_graphs)
            self._saved_at = time.monotonic()
            return True

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._searcher = None

    # -- syncing with the file -----------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(f"file:{self._backend.path}?mode=ro", uri=True,
                                         check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout=5000")
        return self._conn

    def _sync(self) -> None:
        """Bring the in-memory view up to the file: reload a newer manifest, replay the log."""
        for _ in range(5):
            manifest = files.read_manifest(self.folder)
            space = self._backend.get_meta("embedder")
            if self._searcher is None or self._stale(manifest, space):
                self._load(manifest, space)
            self._replay()
            # A save that switched the manifest meanwhile may have pruned log entries we
            # needed: start again from the new manifest (index_files explains the order).
            latest = files.read_manifest(self.folder)
            if (latest or {}).get("generation") == self._manifest.get("generation") or \
                    latest is None:
                return
        log.warning("index of %s kept changing while it was read", self._backend.path)

    def _stale(self, manifest: dict | None, space: str | None) -> bool:
        if space != self._manifest.get("space"):
            return True  # re-indexed with another embedder
        return manifest is not None and manifest.get("generation") != \
            self._manifest.get("generation")

    def _new_searcher(self, space: str | None) -> Any:
        from ..searcher import Searcher

        lazy = None
        if space:
            dim = int(self._backend.get_meta("embedder_dim") or 0)
            lazy = LazyEmbedder(self._load_embedder, space, dim)
        return Searcher([], [], None, None, lazy, language=self._language)

    def _load(self, manifest: dict | None, space: str | None) -> None:
        """A Searcher over the saved index (or an empty one if it cannot be used)."""
        searcher = self._new_searcher(space)
        problem = self._unusable(manifest)
        self._rebuilt = bool(problem)
        if problem:
            if manifest is not None:
                log.warning("rebuilding the index of %s: %s", self._backend.path, problem)
            self._manifest = {"generation": (manifest or {}).get("generation", 0),
                              "space": space, "last_chunk_id": 0, "removed_seq": 0,
                              "vector_seq": 0, "rows": 0, "base_rows": 0, "files": {}}
        else:
            self._open_saved(searcher, manifest)
            if manifest["space"] != space:  # re-indexed: the saved vectors are another space
                searcher.dense.load(np.zeros((0, 0), np.float32), np.zeros(0, bool),
                                    (np.zeros(0), np.zeros((0, 0))))
                self._manifest["vector_seq"] = 0
                self._manifest["space"] = space
                self._manifest["base_rows"] = -1  # the vectors file must be rewritten
        self._searcher = searcher
        self._replayed = 0
        if self._manifest.get("vector_seq") == 0 and space and len(searcher):
            self._reload_vectors(space)

    def _unusable(self, manifest: dict | None) -> str | None:
        if manifest is None:
            return "no saved index"
        if manifest.get("kb_id") != self._backend.get_meta("kb_id"):
            return "the saved index belongs to another knowledge base file"
        if manifest["last_chunk_id"] > self._sequence("chunks") or \
                manifest["removed_seq"] > self._sequence("removed_chunks") or \
                manifest["vector_seq"] > self._sequence("vector_log"):
            return "the saved index is newer than the file (restored from a backup?)"
        for name in manifest["files"].values():
            if name and not (self.folder / name).exists():
                return f"{name} is missing"
        for name, _, _ in manifest["segments"]:
            if not (self.folder / name).exists():
                return f"segment {name} is missing"
        for name, _ in graphs_of(manifest):
            if not (self.folder / name).is_file():
                return f"{name} is missing"
        return None

    def _open_saved(self, searcher: Any, manifest: dict) -> None:
        folder, rows = self.folder, manifest["rows"]
        segments = []
        for name, offset, _ in manifest["segments"]:
            segments.append((offset, Segment.load(folder / name)))
        names = manifest["files"]
        row_ids = np.fromfile(folder / names["rows"], dtype=np.int64, count=rows)
        dead = np.load(folder / names["dead"]) if names.get("dead") else np.zeros(0, np.int64)
        searcher.lexical.load(segments, row_ids, dead)
        dim, base_rows = manifest.get("dim") or 0, manifest["base_rows"]
        if dim and base_rows:
            base = files.raw_array(folder / names["vectors"], np.float32, base_rows, dim)
            has = np.fromfile(folder / names["has"], dtype=np.bool_, count=base_rows)
            has[dead[dead < base_rows]] = False
            moments = np.load(folder / names["moments"])
            searcher.dense.load(base, has, (moments[0], moments[1:]))
            graphs = graphs_of(manifest)
            if graphs:
                from ..ann import ApproximateIndex, GraphSet

                searcher.dense.ann = GraphSet([ApproximateIndex.open(folder / name)
                                               for name, _ in graphs])
                if names.get("vectors16"):
                    searcher.dense.use_half(files.raw_array(folder / names["vectors16"],
                                                            np.float16, base_rows, dim))
                if names.get("ann_uncovered"):
                    searcher.dense.uncovered = np.load(folder / names["ann_uncovered"])
        self._manifest = dict(manifest)

    def _sequence(self, table: str) -> int:
        row = self._db().execute("SELECT seq FROM sqlite_sequence WHERE name=?",
                                 (table,)).fetchone()
        return row[0] if row else 0

    def _replay(self) -> None:
        """Apply the file's changes since the in-memory view (one read snapshot)."""
        db, m, searcher = self._db(), self._manifest, self._searcher
        space = m.get("space")
        db.execute("BEGIN")
        try:
            removed_seq = self._sequence("removed_chunks")
            vector_seq = self._sequence("vector_log")
            gone = [r[0] for r in db.execute(
                "SELECT chunk_id FROM removed_chunks WHERE seq > ? AND seq <= ?",
                (m["removed_seq"], removed_seq))]
            if gone:
                searcher.remove(gone)
            last = m["last_chunk_id"]
            cursor = db.execute("SELECT id FROM chunks WHERE id > ? ORDER BY id", (last,))
            while batch := cursor.fetchmany(BATCH):
                ids = [r[0] for r in batch]
                languages, keys = self._analysed(db, ids)
                searcher.add_analysed(ids, keys, languages)
                self._replayed += len(ids)
                m["last_chunk_id"] = ids[-1]
            if space:
                # CROSS JOIN keeps chunks the outer loop: planned the other way, SQLite scans
                # every vector of the space to find the few new chunks (seconds at 100k).
                self._add_vectors(db.execute(
                    "SELECT c.id, e.vector FROM chunks c CROSS JOIN embeddings e ON "
                    "e.embedder = ? AND e.text_hash = c.text_hash WHERE c.id > ?", (space, last)))
                hashes = [r[0] for r in db.execute(
                    "SELECT DISTINCT text_hash FROM vector_log WHERE seq > ? AND seq <= ? "
                    "AND embedder = ?", (m["vector_seq"], vector_seq, space))]
                for part in batches(hashes):
                    self._add_vectors(db.execute(
                        "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embedder = "
                        "? AND e.text_hash = c.text_hash WHERE c.id <= ? AND c.text_hash IN "
                        f"({','.join('?' * len(part))})", (space, last, *part)))
            m["removed_seq"], m["vector_seq"] = removed_seq, vector_seq
        finally:
            db.execute("COMMIT")

    def _analysed(self, db: sqlite3.Connection, ids: list[int]) -> tuple[list, list]:
        """(languages, term keys) of these chunks. Chunks this process just stored come with
        the keys their extraction worker made (prepare.py), as arrays; only the others'
        text is read and analysed here (reading every new chunk's text back, to use none
        of it, cost the ingesting process 10% of its time)."""
        analyzer = self._searcher.lexical.analyzer
        given = self._backend.take_analysis(ids, analyzer_signature(analyzer))
        analysed = [keys_array(k) if k is not None else None for k in given]
        missing = [chunk_id for chunk_id, a in zip(ids, analysed) if a is None]
        if missing:
            texts = {}
            for part in batches(missing):
                texts.update((r[0], r[1:]) for r in db.execute(
                    "SELECT id, title, heading_path, text FROM chunks WHERE id IN "
                    f"({','.join('?' * len(part))})", part))
            for i, chunk_id in enumerate(ids):
                if analysed[i] is None:
                    title, heading_path, text = texts[chunk_id]
                    analysed[i] = analyzer.analyse_keys(index_text(title, json.loads(heading_path),
                                                                   text))
        return [a[0] for a in analysed], [a[1] for a in analysed]

    def _reload_vectors(self, space: str) -> None:
        """Every vector of the space (after a re-index, or when the saved index had none)."""
        db = self._db()
        db.execute("BEGIN")
        try:
            self._add_vectors(db.execute(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embedder = ? AND "
                "e.text_hash = c.text_hash WHERE c.id <= ?",
                (space, self._manifest["last_chunk_id"])))
            self._manifest["vector_seq"] = self._sequence("vector_log")
        finally:
            db.execute("COMMIT")

    def _add_vectors(self, cursor: sqlite3.Cursor) -> None:
        while batch := cursor.fetchmany(BATCH):
            matrix = np.frombuffer(b"".join(blob for _, blob in batch), dtype=np.float32)
            self._searcher.add_vectors([r[0] for r in batch], matrix.reshape(len(batch), -1))

    # -- saving --------------------------------------------------------------------------

    def _unsaved(self) -> bool:
        m, lexical = self._manifest, self._searcher.lexical
        dense_rows, _ = self._searcher.dense.extra()
        return (lexical.n_rows != m["rows"] or len(dense_rows) > 0 or m["base_rows"] < 0
                or len(lexical.dead_rows()) != m.get("dead_count", 0)
                or m.get("kb_id") != self._backend.get_meta("kb_id") or self._lacks_half())

    def _lacks_half(self) -> bool:
        """A KB with graphs saved before the float16 copy existed (written once on open)."""
        m = self._manifest
        return bool(graphs_of(m)) and m.get("base_rows", 0) > 0 and \
            not (m.get("files") or {}).get("vectors16")

    def _graphs_due(self) -> bool:
        from .index_save import graphs_due

        return graphs_due(self._manifest, self._searcher.dense)

    def _save(self, build_graphs: bool = True) -> None:
        from .index_save import save_generation

        manifest = save_generation(self.folder, self._searcher, self._manifest,
                                   self._backend.get_meta("kb_id"), COMPACT_DEAD, build_graphs)
        self._backend.prune_change_log(manifest["removed_seq"], manifest["vector_seq"])
        self._load(manifest, manifest["space"])  # map what was written, free the memory
        self._replay()
