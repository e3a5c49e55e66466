"""Storage backends of the knowledge base: the seam between `KnowledgeBase` and where it keeps
its documents, chunks, vectors and search indexes.

    backend = open_backend("kb.db")                        # SQLite file (embedded default)
    backend = open_backend("postgresql://user@/db?host=/run/pg")   # PostgreSQL + pgvector

`KnowledgeBase` (base.py) is the only user. Everything above the storage, ingest (walking,
extraction, chunking), text analysis, fusion and confidence, is backend-independent and lives
in `knowledge/`, so a KB gives the same hits whichever backend holds it. A backend does two
things:

1. Storage (`Backend`): documents with their chunks, written one document per transaction
   (a document is in the KB completely or not at all); vectors keyed by (embedder, text
   hash), so text already embedded is never embedded again; a `revision` that every write
   bumps, which is how any process sees that another one changed the KB.
2. Search (`Backend.search_index`): a `SearchIndex` that answers with a `Searcher`-like
   object (searcher.py) kept in step with the storage. `live_index.LiveIndex` is the generic
   one, an in-memory index built from `chunk_keys` / `chunks_by_id` / `vector_keys` /
   `chunk_vectors` on first use and synced incrementally by revision; a backend may return
   that, or its own persisted index (the SQLite backend keeps indexes on disk beside its file,
   so opening a KB never re-analyses or re-embeds it). `SearchIndex.checkpoint()` is called
   after writes (end of an ingest, after each embedding batch) so a persisted index can save
   what changed; for an in-memory index it does nothing.

A backend for a URL scheme registers itself in `BACKENDS` (scheme -> "module:factory"); the
module is imported only when such a URL is opened. Factories take
(location, *, create, busy_timeout) and return a Backend. Errors are `KnowledgeBaseError`
with one line a user can act on.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ...errors import KnowledgeBaseError
from .rows import ChunkRow, DocumentRow

if TYPE_CHECKING:
    from ..chunking import Chunk
    from ..embedders import Embedder

__all__ = ["Backend", "SearchIndex", "ChunkRow", "DocumentRow", "BACKENDS", "open_backend"]

# scheme -> "module:factory"; the module is imported when a location with that scheme opens.
BACKENDS: dict[str, str] = {
    "sqlite": "agentmodes.knowledge.backends.sqlite:SQLiteBackend",
    "postgresql": "agentmodes.knowledge.backends.postgres:PostgresBackend",
    "postgres": "agentmodes.knowledge.backends.postgres:PostgresBackend",
}


@runtime_checkable
class SearchIndex(Protocol):
    """The search side of a backend."""

    @property
    def chunk_count(self) -> int: ...          # chunks searchable lexically (after searcher())

    @property
    def vector_count(self) -> int: ...         # chunks searchable densely (after searcher())

    def searcher(self) -> Any:
        """A synced object with `search(query, mode, k) -> list[ScoredChunk]` (searcher.py)."""
        ...

    def checkpoint(self, wait: float = 5.0, *, due: bool = False) -> bool:
        """Persist what the storage gained since the last checkpoint (no-op in memory);
        `due=True` only if the last one is a few seconds old (called during writes).
        False if another process held the save lock for `wait` seconds."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """What `KnowledgeBase` needs from where a knowledge base is kept."""

    location: str              # path or URL, for messages
    path: Path | None          # the SQLite file; None for a server database

    def close(self) -> None: ...

    # -- meta: embedder name + dim, chunk size + overlap, schema version, revision -------
    def get_meta(self, key: str) -> str | None: ...
    def set_embedder(self, name: str | None, dim: int | None) -> None: ...
    def set_chunking(self, size: int, overlap: int) -> None: ...
    def revision(self) -> int: ...

    # -- documents (ingest.py) -----------------------------------------------------------
    def own_files(self) -> set[str]:
        """Absolute paths of the backend's own files, which ingest must never index."""
        ...

    def document(self, path: str) -> DocumentRow | None: ...
    def documents_under(self, folder: str) -> list[DocumentRow]: ...

    def replace_document(self, path: str, root: str, title: str, content_hash: str,
                         mtime: float, size: int, chunks: list["Chunk"],
                         force: bool = False) -> str:
        """Store a document and its chunks in ONE transaction: 'added', 'updated' or
        'unchanged' (same content hash, not forced; the hash is compared inside the
        transaction, so two concurrent ingests of one file cannot both insert it)."""
        ...

    def remove_document(self, path: str) -> bool: ...

    def list_documents(self, doc_id: int | None = None) -> list[tuple[DocumentRow, int, str]]:
        """(document, chunk count, ingested-at text) for every document, or the one `doc_id`,
        ordered by path (what the page's Documents panel and source viewer show)."""
        ...

    def chunks_of(self, doc_id: int, offset: int = 0, limit: int = -1) -> list[ChunkRow]:
        """A document's chunks in position order; `limit` -1 means all from `offset`."""
        ...

    # -- chunks --------------------------------------------------------------------------
    def chunk_keys(self) -> dict[int, str]:
        """chunk id -> text hash of every chunk (what a full index must contain)."""
        ...

    def chunks_by_id(self, ids: list[int]) -> dict[int, ChunkRow]: ...

    # -- vectors, keyed by (embedder, text hash) -----------------------------------------
    def pending_texts(self, embedder: str) -> list[tuple[str, int]]:
        """(text hash, one chunk id carrying it) for every text without a vector, in
        chunk order."""
        ...

    def count_pending(self, embedder: str | None) -> int: ...
    def put_vectors(self, embedder: str, hashes: list[str], vectors: np.ndarray) -> None: ...

    def vector_keys(self, embedder: str) -> dict[int, str]:
        """chunk id -> text hash of every chunk that has a vector from `embedder`."""
        ...

    def chunk_vectors(self, embedder: str, ids: list[int]) -> tuple[list[int], np.ndarray]:
        """(ids that have a vector, float32 matrix of their vectors in that order)."""
        ...

    def prune_vectors(self) -> int: ...
    def drop_vectors_except(self, embedder: str | None) -> None: ...

    # -- statistics and integrity --------------------------------------------------------
    def counts(self) -> dict[str, int]: ...       # documents, chunks, vectors
    def size_bytes(self) -> int: ...              # on-disk size (0 if not known)
    def integrity_problems(self) -> list[str]: ...

    # -- search --------------------------------------------------------------------------
    def search_index(self, load_embedder: Callable[[], "Embedder"],
                     language: str) -> SearchIndex: ...


def scheme_of(location: str | os.PathLike) -> str:
    """'sqlite' for a path (or sqlite:///path), else the URL scheme."""
    text = os.fspath(location)
    scheme, sep, _ = text.partition("://")
    return scheme.lower() if sep and scheme.isalpha() else "sqlite"


def open_backend(location: str | os.PathLike, *, create: bool = True,
                 busy_timeout: float = 5.0) -> Backend:
    """The backend for a path (SQLite) or URL (by scheme, see BACKENDS)."""
    scheme = scheme_of(location)
    target = BACKENDS.get(scheme)
    if target is None:
        raise KnowledgeBaseError(f"unknown knowledge base location {os.fspath(location)!r}: "
                                 "give a file path or a postgresql:// URL")
    module_name, _, factory_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise KnowledgeBaseError(f"the {scheme} backend is not available here ({err})") from None
    factory: Callable[..., Backend] = getattr(module, factory_name)
    if scheme == "sqlite":
        text = os.fspath(location)
        location = Path(text[len("sqlite://"):] if text.startswith("sqlite://") else text)
        location = location.expanduser()
    return factory(location, create=create, busy_timeout=busy_timeout)
