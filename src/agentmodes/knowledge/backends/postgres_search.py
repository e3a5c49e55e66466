"""Search inside PostgreSQL: the SearchIndex of a PostgreSQL knowledge base.

Nothing is loaded into the worker but the corpus statistics and the vector moments (a few
rows; 1.2 MB for 384-dim vectors), re-read when the KB's revision moves. Every query is
answered by SQL over the tables the writers keep up to date in their own transactions
(postgres_lexical.py, postgres_vectors.py), so a worker that starts, or one that another
worker's ingest just changed, answers at once and no process rebuilds an index.

The ranking (modes, z-fusion, feedback, confidence) is retriever.py's, the same code as on
SQLite: `PostgresSearcher` only answers its hooks with SQL. Each search runs in one
REPEATABLE READ READ ONLY transaction, so all of its statements see the same KB even while
a writer commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis import Analyzer
from ..fusion import DEFAULT_WEIGHTS, Moments
from ..live_index import LazyEmbedder
from ..retriever import CANDIDATES, SEMANTIC_CANDIDATES, Ranking, Retriever
from . import postgres_lexical as lexical
from . import postgres_vectors as vectors

if TYPE_CHECKING:
    from ..embedders import Embedder
    from .postgres import PostgresBackend

_STATE_KEYS = ("revision", "embedder", "embedder_dim", "backfill") + lexical.STATS


class KBState:
    """What a search needs to know about the KB as a whole, for one revision."""

    def __init__(self, values: dict[str, str], moments: vectors.VectorMoments) -> None:
        self.revision = int(values.get("revision") or 0)
        self.space = values.get("embedder") or None
        self.dim = int(values.get("embedder_dim") or 0)
        self.backfill = bool(values.get("backfill"))
        self.lexical = lexical.LexicalStats(values)
        self.moments = moments


STATE_SQL = "SELECT key, value FROM meta WHERE key = ANY(%s)"


def read_values(conn: Any) -> dict[str, str]:
    return dict(conn.execute(STATE_SQL, (list(_STATE_KEYS),)).fetchall())


class SearchContext:
    """One search's connection (pipelined, one snapshot) and what it learnt on the way."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.state: KBState | None = None
        self.df: dict[int, int] = {}                     # document frequencies seen
        self.runs: dict[tuple[int, ...], lexical.SqlLexicalRun] = {}
        self.expansions: dict[tuple[int, int], Any] = {}  # (row, n) -> cursor
        self.top: tuple[int, vectors.SqlDenseRun] | None = None  # (row, run of its vector)

    def send(self, query: str, params: Any = None, ef_search: int | None = None) -> Any:
        """Send a statement; its cursor's fetch waits for the answer (pipeline mode)."""
        if ef_search and ef_search > vectors.HNSW_EF_SEARCH:
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
        return self.conn.execute(query, params)

    def doc_freqs(self, keys: list[int]) -> dict[int, int]:
        missing = [k for k in keys if k not in self.df]
        if missing:
            found = dict(self.send(lexical.DF_SQL, (missing,)).fetchall())
            self.df.update((k, found.get(k, 0)) for k in missing)
        return self.df


_EXPANSION_SQL = ("SELECT t.key, COALESCE(d.df, 0) FROM chunks c CROSS JOIN LATERAL "
                  "unnest(c.terms) WITH ORDINALITY AS t(key, position) LEFT JOIN terms d ON "
                  "d.term = t.key WHERE c.id = %s ORDER BY COALESCE(d.df, 0), t.position "
                  "LIMIT %s")
_COVERAGE_SQL = "SELECT id, terms FROM chunks WHERE id = ANY(%s)"


class PostgresSearcher(Retriever):
    """The Retriever's hooks answered by SQL; rows are chunk ids.

    A search costs a handful of round trips, whatever the KB's size: statements that do
    not depend on each other go out together (psycopg's pipeline mode): the state with the
    query terms' document frequencies; BM25 with the nearest vectors; the missing scores of
    the union; the top hit's vector with its feedback terms; both feedback passes; the
    missing scores of the grown union."""

    def __init__(self, index: "PostgresIndex", embedder: Any) -> None:
        self._index = index
        self.embedder = embedder
        self.weights = DEFAULT_WEIGHTS
        self.analyzer = index.analyzer
        self._local = threading.local()
        self.exact_vectors = False   # True: exact vector scans even with an HNSW index

    # -- one snapshot per search ----------------------------------------------------------

    def rank(self, query: str, mode: str = "hybrid", k: int = 5,
             query_vector: np.ndarray | None = None) -> Ranking:
        if getattr(self._local, "ctx", None) is not None:
            return super().rank(query, mode, k, query_vector)
        with self._index.backend.snapshot(pipeline=True) as conn:
            ctx = SearchContext(conn)
            values = ctx.send(STATE_SQL, (list(_STATE_KEYS),))
            guess = self._terms(query, self._index.current_or_none)
            frequencies = ctx.send(lexical.DF_SQL, (sorted(set(guess)),)) if guess else None
            ctx.state = self._index.state_from(conn, dict(values.fetchall()))
            if frequencies is not None:
                ctx.df.update(frequencies.fetchall())
                ctx.df.update((key, 0) for key in guess if key not in ctx.df)
            self._local.ctx = ctx
            try:
                return super().rank(query, mode, k, query_vector)
            finally:
                self._local.ctx = None

    @property
    def _ctx(self) -> SearchContext:
        return self._local.ctx

    @property
    def _state(self) -> KBState:
        ctx = getattr(self._local, "ctx", None)
        return ctx.state if ctx is not None else self._index.current

    def _terms(self, query: str, state: KBState | None) -> list[int]:
        fallback = state.lexical.majority(self.analyzer.fallback) if state else None
        return self.analyzer.analyse_keys(query, fallback=fallback)[1]

    # -- the Retriever's hooks ------------------------------------------------------------

    def __len__(self) -> int:
        return self._state.lexical.chunks

    @property
    def vector_count(self) -> int:
        state = self._state
        return state.moments.count if state.space else 0

    def query_terms(self, query: str) -> list[int]:
        return self._terms(query, self._state)

    def lexical_run(self, terms: list[int]) -> lexical.SqlLexicalRun:
        run = lexical.SqlLexicalRun(self._ctx, self._state.lexical, terms, CANDIDATES)
        self._ctx.runs.setdefault(tuple(terms), run)
        return run

    def dense_run(self, vector: np.ndarray, propose: bool = True) -> vectors.SqlDenseRun:
        state = self._state
        return vectors.SqlDenseRun(self._ctx, state.space, state.dim, state.moments, vector,
                                   SEMANTIC_CANDIDATES, self.exact_vectors, propose)

    def dense_moments(self, vector: np.ndarray) -> Moments:
        return self._state.moments.of(vector)

    def feedback_proposals(self, vector: np.ndarray) -> np.ndarray:
        return self.dense_run(vector).proposals()

    def vector(self, row: int) -> np.ndarray | None:
        ctx = self._ctx
        found = ctx.send(vectors.VECTOR_SQL, (self._state.space, int(row)))
        # The feedback terms of this row are asked for next: send that along.
        n = self.weights.feedback_terms
        if self.weights.lexical_feedback and n > 0:
            ctx.expansions[(int(row), n)] = ctx.send(_EXPANSION_SQL, (int(row), n))
        rows = found.fetchall()
        if not rows:
            return None
        top = vectors.as_array(rows[0][0])
        ctx.top = (int(row), self.dense_run(top, propose=False))
        return top

    def dots(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        ctx = self._ctx
        if ctx.top is not None and np.array_equal(ctx.top[1]._vector, vector):
            return ctx.top[1].at(rows)
        return self.dense_run(vector, propose=False).at(rows)

    def expansion_terms(self, row: int, n: int) -> list[int]:
        # lexical.py's order: lowest document frequency first, ties in order of occurrence.
        if n <= 0:
            return []
        ctx = self._ctx
        cursor = ctx.expansions.pop((int(row), n), None) or ctx.send(_EXPANSION_SQL, (int(row), n))
        found = cursor.fetchall()
        ctx.df.update(found)
        return [key for key, _ in found]

    def coverage(self, terms: list[int], rows: np.ndarray) -> np.ndarray:
        distinct = set(terms)
        if not distinct or not len(rows):
            return np.zeros(len(rows), dtype=np.float32)
        run = self._ctx.runs.get(tuple(terms))
        if run is not None:                # the query's own BM25 run counted them
            return (run.matched(rows) / len(distinct)).astype(np.float32)
        keys = dict(self._ctx.send(_COVERAGE_SQL, ([int(r) for r in rows],)).fetchall())
        return np.array([len(distinct.intersection(keys.get(int(r)) or ())) / len(distinct)
                         for r in rows], dtype=np.float32)

    def chunk_ids(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(rows, dtype=np.int64)

    def prefetch(self, rows: np.ndarray, *runs: Any) -> None:
        top = self._ctx.top
        for run in (*runs, top[1] if top is not None else None):
            if run is not None:
                run.request(rows)


class PostgresIndex:
    """SearchIndex (backends/__init__.py) of a PostgreSQL KB: state by revision, SQL search."""

    def __init__(self, backend: "PostgresBackend", load_embedder: Callable[[], "Embedder"],
                 language: str) -> None:
        self.backend = backend
        self.analyzer = Analyzer(language)
        self._load_embedder = load_embedder
        self._lock = threading.Lock()
        self._state: KBState | None = None
        self._searcher: PostgresSearcher | None = None
        self._space: str | None = None

    @property
    def current(self) -> KBState:
        if self._state is None:
            with self.backend.snapshot() as conn:
                self.state_from(conn, read_values(conn))
        return self._state

    @property
    def current_or_none(self) -> KBState | None:
        return self._state

    def state_from(self, conn: Any, values: dict[str, str]) -> KBState:
        """The KB state for these meta values (the vector moments re-read from `conn` only
        when the revision moved)."""
        cached = self._state
        revision = int(values.get("revision") or 0)
        space = values.get("embedder") or None
        if cached is not None and cached.revision == revision and cached.space == space:
            return cached
        moments = vectors.VectorMoments.read(conn, space) if space else vectors.VectorMoments()
        state = KBState(values, moments)
        with self._lock:
            if self._state is None or self._state.revision <= state.revision:
                self._state = state
        return state

    @property
    def chunk_count(self) -> int:
        return self.current.lexical.chunks

    @property
    def vector_count(self) -> int:
        state = self.current
        return state.moments.count if state.space else 0

    def searcher(self) -> PostgresSearcher:
        """The searcher, with the KB's current state (one small query)."""
        with self.backend.connection() as conn:
            state = self.state_from(conn, read_values(conn))
        if state.backfill:
            self.backend.backfill(self.analyzer)
            self._state = None
            state = self.current
        if self._searcher is None or state.space != self._space:
            lazy = LazyEmbedder(self._load_embedder, state.space, state.dim) \
                if state.space else None
            self._searcher = PostgresSearcher(self, lazy)
            self._space = state.space
        return self._searcher

    def checkpoint(self, wait: float = 5.0, *, due: bool = False) -> bool:
        """Nothing to save (the tables are the index); after an ingest, build the HNSW
        index once the KB has enough vectors for it to pay (postgres_vectors.py)."""
        if due:
            return True
        self._state = None
        state = self.current
        if state.space:
            vectors.ensure_index(self.backend.url.conninfo, self.backend.schema, state.space,
                                 state.dim, state.moments.count)
        return True

    def close(self) -> None:
        self._searcher = None

    @contextmanager
    def exact(self) -> Iterator[None]:
        """Exact vector scans while inside (the benchmark's recall reference)."""
        searcher = self.searcher()
        searcher.exact_vectors = True
        try:
            yield
        finally:
            searcher.exact_vectors = False
