"""Keep an in-memory Searcher in step with a backend's storage, incrementally.

The generic `SearchIndex` of the storage seam (backends/__init__.py): it needs only the
Backend's storage calls, so it serves any backend. The storage is the truth; the Searcher
(BM25 terms, vector matrix) is a cache of it.
Rebuilding that cache after every ingest would re-analyse every chunk, which grows with the
KB; instead each sync compares (chunk id, text hash) pairs with what is indexed and only
adds and removes the difference. The store's `revision` says cheaply whether anything
changed at all, including writes by another process.

A change of embedder (re-index) changes the vector space, so it rebuilds from scratch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .chunking import index_text
from .embedders import Embedder

if TYPE_CHECKING:
    from .backends import Backend


class LazyEmbedder:
    """Stands in for the real embedder inside the searcher until a query needs a vector,
    so lexical searches never load an embedding model."""

    def __init__(self, load: Callable[[], Embedder], name: str, dim: int) -> None:
        self._load, self.name, self.dim = load, name, dim

    def embed_query(self, text: str) -> np.ndarray:
        return self._load().embed_query(text)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._load().embed_passages(texts)


class LiveIndex:
    def __init__(self, store: "Backend", load_embedder: Callable[[], Embedder], language: str) -> None:
        self._store = store
        self._load_embedder = load_embedder
        self._language = language
        self._searcher: Any = None
        self._revision = -1
        self._space: str | None = None        # embedder name of the indexed vectors
        self._texts: dict[int, str] = {}      # chunk id -> text hash, indexed lexically
        self._vectors: dict[int, str] = {}    # chunk id -> text hash, indexed densely

    def checkpoint(self, wait: float = 0.0, *, due: bool = False) -> bool:
        """Nothing to persist: this index lives in memory and re-syncs by revision."""
        return True

    def close(self) -> None:
        self._searcher = None

    @property
    def chunk_count(self) -> int:
        return len(self._texts)

    @property
    def vector_count(self) -> int:
        return len(self._vectors)

    def searcher(self) -> Any:
        """The Searcher for the file's current content (synced first if the file changed)."""
        revision = self._store.revision()  # read before the rows: a later write re-syncs
        if self._searcher is not None and revision == self._revision:
            return self._searcher
        space = self._store.get_meta("embedder")
        if self._searcher is None or space != self._space:
            self._reset(space)
        self._sync_texts()
        self._sync_vectors()
        self._revision = revision
        return self._searcher

    def _reset(self, space: str | None) -> None:
        from .searcher import Searcher  # the search core loads bm25s/numpy only when needed

        lazy = None
        if space:
            dim = int(self._store.get_meta("embedder_dim") or 0)
            lazy = LazyEmbedder(self._load_embedder, space, dim)
        self._searcher = Searcher([], [], None, None, lazy, language=self._language)
        self._space = space
        self._texts.clear()
        self._vectors.clear()

    def _sync_texts(self) -> None:
        current = self._store.chunk_keys()
        gone = [i for i, h in self._texts.items() if current.get(i) != h]
        if gone:
            self._searcher.remove(gone)
            for chunk_id in gone:
                self._texts.pop(chunk_id, None)
                self._vectors.pop(chunk_id, None)
        new = [i for i, h in current.items() if self._texts.get(i) != h]
        rows = self._store.chunks_by_id(new)
        ids = [i for i in new if i in rows]  # a chunk deleted meanwhile waits for the next sync
        if ids:
            self._searcher.add(ids, [index_text(rows[i].title, rows[i].heading_path, rows[i].text)
                                     for i in ids])
            self._texts.update((i, rows[i].text_hash) for i in ids)

    def _sync_vectors(self) -> None:
        if not self._space:
            return
        current = self._store.vector_keys(self._space)
        new = [i for i, h in current.items() if i in self._texts and self._vectors.get(i) != h]
        ids, matrix = self._store.chunk_vectors(self._space, new)
        if ids:
            self._searcher.add_vectors(ids, matrix)
            self._vectors.update((i, current[i]) for i in ids)
