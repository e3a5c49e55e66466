"""The dense index of a PostgreSQL knowledge base: pgvector search plus closed-form moments.

Vectors stay where the storage keeps them (embeddings, keyed by embedder and text hash; a
chunk has the vector of its text). A query asks for the SEMANTIC_CANDIDATES nearest vectors
by cosine distance and rescoring uses their exact inner products, as on SQLite:

- below HNSW_MIN vectors that is an exact scan (every vector, sorted by distance);
- from HNSW_MIN on, an HNSW index (pgvector, m 16, ef_construction 128, ef_search 256: the
  settings of the SQLite backend's graph, ann.py). It is a partial expression index per
  embedder, `(vector::vector(DIM)) vector_cosine_ops WHERE embedder = '...'`, because the
  column holds vectors of any dimension. It is built once the KB has HNSW_MIN vectors, at
  the end of an ingest (`ensure_index`, CONCURRENTLY: searches and other writers go on);
  after that pgvector keeps it up to date on every insert.

Hybrid z-scores need the mean and spread of a query's cosine over ALL vectors; those come in
closed form from the vectors' sum and Gram matrix (dense.py), which vector_moments keeps per
embedder, updated in the transaction of every write that changes which chunks have which
vector. So no process ever reads every vector to search.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from typing import Any

import numpy as np

from ..dense import closed_form_moments
from ..fusion import Moments

log = logging.getLogger(__name__)

# Below this many vectors a search scans them all (exact); from here on the ingest builds
# the HNSW index. Measured (`agentmodes bench pg-hnsw`, benchmarks/results/pg_hnsw.md, 384-dim
# vectors, the KB's own statement for 256 candidates): the index is faster at p50 from 5k
# vectors on (0.72x the scan at 5k, 0.55x at 10k, 0.28x at 50k), but below about 10k the
# planner still picks the table scan for that statement, so an index built there costs the
# ingest and buys nothing; at 10k it picks the index by itself. Its price is recall@10 of the
# candidates (0.96 at 10k, 0.89 at 50k on the benchmark's stand-in vectors) at any size above
# the threshold. AGENTMODES_PG_HNSW_MIN moves it.
HNSW_MIN = int(os.environ.get("AGENTMODES_PG_HNSW_MIN") or 10_000)
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 16, 128, 256
BUILD_MEMORY = os.environ.get("AGENTMODES_PG_INDEX_MEMORY") or "512MB"


def index_name(embedder: str) -> str:
    return "embeddings_hnsw_" + hashlib.blake2b(embedder.encode(), digest_size=6).hexdigest()


def literal(text: str) -> str:
    """A SQL string literal: the index predicate must be a constant the planner can match."""
    return "'" + text.replace("'", "''") + "'"


def knn_sql(embedder: str, dim: int, exact: bool = False) -> str:
    """The nearest vectors' chunks and their cosines. ORDER BY matches the index expression
    (so the planner can use it); `exact` orders by an expression no index has."""
    order = "vector <=> %(q)s" if exact else f"vector::vector({dim}) <=> %(q)s::vector({dim})"
    return (f"SELECT c.id, -(e.vector <#> %(q)s) FROM (SELECT text_hash, vector FROM "
            f"embeddings WHERE embedder = {literal(embedder)} ORDER BY {order} LIMIT %(n)s) e "
            "JOIN chunks c ON c.text_hash = e.text_hash")


DOTS_SQL = ("SELECT c.id, -(e.vector <#> %(q)s) FROM chunks c JOIN embeddings e ON "
            "e.embedder = %(space)s AND e.text_hash = c.text_hash WHERE c.id = ANY(%(ids)s)")
VECTOR_SQL = ("SELECT e.vector FROM chunks c JOIN embeddings e ON e.embedder = %s AND "
              "e.text_hash = c.text_hash WHERE c.id = %s")


# -- moments ------------------------------------------------------------------------------

class VectorMoments:
    """Count, sum and Gram matrix (float64) of the chunks' vectors of one embedder."""

    def __init__(self, count: int = 0, total: np.ndarray | None = None,
                 gram: np.ndarray | None = None) -> None:
        self.count, self.total, self.gram = count, total, gram

    @classmethod
    def read(cls, conn: Any, embedder: str, lock: bool = False) -> "VectorMoments":
        row = conn.execute("SELECT count, total, gram FROM vector_moments WHERE embedder = %s"
                           + (" FOR UPDATE" if lock else ""), (embedder,)).fetchone()
        if row is None:
            return cls()
        total = np.frombuffer(row[1], dtype=np.float64)
        return cls(int(row[0]), total, np.frombuffer(row[2], dtype=np.float64).reshape(
            len(total), len(total)))

    def of(self, query: np.ndarray) -> Moments:
        return Moments(*closed_form_moments(self.total, self.gram, self.count, query))

    def shifted(self, vectors: np.ndarray, weights: np.ndarray) -> "VectorMoments":
        wide = np.asarray(vectors, dtype=np.float64)
        dim = wide.shape[1]
        total = np.zeros(dim) if self.total is None else self.total
        gram = np.zeros((dim, dim)) if self.gram is None else self.gram
        weights = np.asarray(weights, dtype=np.float64)
        return VectorMoments(self.count + int(weights.sum()), total + weights @ wide,
                             gram + (wide * weights[:, None]).T @ wide)

    def write(self, conn: Any, embedder: str) -> None:
        conn.execute("INSERT INTO vector_moments (embedder, count, total, gram) VALUES "
                     "(%s, %s, %s, %s) ON CONFLICT (embedder) DO UPDATE SET count = "
                     "excluded.count, total = excluded.total, gram = excluded.gram",
                     (embedder, self.count, self.total.tobytes(), self.gram.tobytes()))


# The current embedder's vectors of the texts given and of the texts of a document's chunks
# (`doc`, NULL for none): what an edit of that document may change in the moments.
TOUCHED_SQL = ("SELECT e.text_hash, e.vector FROM embeddings e WHERE e.embedder = (SELECT value "
               "FROM meta WHERE key = 'embedder') AND e.text_hash = ANY(%(hashes)s::text[] || "
               "ARRAY(SELECT text_hash FROM chunks WHERE doc_id = %(doc)s))")


def shift_moments(conn: Any, touched: list[tuple[str, Any]], gained: Counter,
                  lost: Counter) -> None:
    """Update the current embedder's moments for texts that gained or lost chunks (each
    counted as often as chunks carrying it changed); `touched`: TOUCHED_SQL's rows. Costs
    nothing when no touched text has a vector (a new document before it is embedded)."""
    weights = {h: gained.get(h, 0) - lost.get(h, 0) for h, _ in touched}
    found = [(h, v) for h, v in touched if weights[h]]
    if not found:
        return
    space = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0]
    matrix = np.stack([as_array(v) for _, v in found])
    VectorMoments.read(conn, space, lock=True).shifted(
        matrix, np.array([weights[h] for h, _ in found], dtype=np.float64)).write(conn, space)


def rebuild_moments(conn: Any) -> None:
    """Moments of every embedder from scratch (a KB from schema version 1)."""
    conn.execute("DELETE FROM vector_moments")
    spaces = [r[0] for r in conn.execute("SELECT DISTINCT embedder FROM embeddings")]
    for space in spaces:
        moments = VectorMoments()
        with conn.cursor(name="moments", binary=True) as cur:
            cur.itersize = 5_000
            cur.execute("SELECT e.vector FROM chunks c JOIN embeddings e ON e.embedder = %s "
                        "AND e.text_hash = c.text_hash", (space,))
            while batch := cur.fetchmany(5_000):
                matrix = np.stack([as_array(r[0]) for r in batch])
                moments = moments.shifted(matrix, np.ones(len(batch)))
        if moments.count:
            moments.write(conn, space)


# -- the HNSW index -----------------------------------------------------------------------

def index_state(conn: Any, embedder: str) -> bool | None:
    """True: a valid HNSW index for `embedder`; False: a broken one (an interrupted build);
    None: none."""
    row = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = "
                       "i.indexrelid WHERE c.relname = %s AND c.relnamespace = "
                       "current_schema()::regnamespace", (index_name(embedder),)).fetchone()
    return None if row is None else bool(row[0])


def ensure_index(conninfo: str, schema: str, embedder: str, dim: int, count: int) -> bool:
    """Build the embedder's HNSW index if the KB has HNSW_MIN vectors and none yet; True if
    it was built now. Runs on a connection of its own (CONCURRENTLY needs autocommit), under
    an advisory lock so that two processes finishing an ingest do not both build it."""
    import psycopg

    if count < HNSW_MIN or not dim:
        return False
    name, key = index_name(embedder), f"agentmodes:{schema}:hnsw"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        if index_state(conn, embedder):
            return False
        if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            return False                     # another process is building it
        try:
            if index_state(conn, embedder) is False:
                conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
            if index_state(conn, embedder):
                return False
            conn.execute(f"SET maintenance_work_mem = {literal(BUILD_MEMORY)}")
            log.info("building the HNSW index of %s (%d vectors)", schema, count)
            conn.execute(index_sql(embedder, dim, concurrently=True))
            return True
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


def index_sql(embedder: str, dim: int, concurrently: bool = False) -> str:
    """CREATE INDEX of the embedder's HNSW index (also what bench pg-hnsw builds)."""
    return (f'CREATE INDEX {"CONCURRENTLY " if concurrently else ""}"{index_name(embedder)}" '
            f"ON embeddings USING hnsw ((vector::vector({dim})) vector_cosine_ops) WITH "
            f"(m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
            f"WHERE embedder = {literal(embedder)}")


def drop_indexes_except(conn: Any, embedder: str | None) -> None:
    keep = index_name(embedder) if embedder else None
    for (name,) in conn.execute("SELECT c.relname FROM pg_class c WHERE c.relkind = 'i' AND "
                                "c.relname LIKE 'embeddings\\_hnsw\\_%%' AND c.relnamespace = "
                                "current_schema()::regnamespace").fetchall():
        if name != keep:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')


# -- searching ----------------------------------------------------------------------------

class SqlDenseRun:
    """Cosines of one query vector (DenseRun, retriever.py): the nearest chunks from
    pgvector (asked for at once, read when needed: the search pipelines its statements),
    cosines of other chunks on request, moments in closed form."""

    def __init__(self, ctx: Any, space: str, dim: int, moments: VectorMoments,
                 vector: np.ndarray, proposals: int, exact: bool = False,
                 propose: bool = True) -> None:
        self._ctx, self._space, self._dim, self._exact = ctx, space, dim, exact
        self._vector = np.asarray(vector, dtype=np.float32)
        self._count = proposals
        self._cosine: dict[int, float] = {}
        self._asked: set[int] = set()
        self._pending: list[Any] = []
        self._proposed: np.ndarray | None = None
        self._moments_of = moments
        self._knn = self._send_knn(proposals) if propose else None

    @property
    def moments(self) -> Moments:
        return self._moments_of.of(self._vector)

    def _send_knn(self, count: int) -> Any:
        return self._ctx.send(knn_sql(self._space, self._dim, self._exact),
                              {"q": self._vector, "n": count}, ef_search=count)

    def _nearest(self, cursor: Any) -> np.ndarray:
        found = cursor.fetchall()
        self._cosine.update(found)
        self._asked.update(i for i, _ in found)
        return np.unique(np.array([i for i, _ in found], dtype=np.int64))

    def request(self, rows: np.ndarray) -> None:
        missing = [int(r) for r in rows if int(r) not in self._asked]
        if missing:
            self._pending.append(self._ctx.send(DOTS_SQL, {"q": self._vector,
                                                           "space": self._space,
                                                           "ids": missing}))
            self._asked.update(missing)

    def _resolve(self, rows: np.ndarray) -> None:
        self.proposals()          # its cosines first: they spare asking for those rows
        self.request(rows)
        for cursor in self._pending:
            self._cosine.update(cursor.fetchall())
        self._pending.clear()

    def at(self, rows: np.ndarray) -> np.ndarray:
        self._resolve(rows)
        return np.array([self._cosine.get(int(r), 0.0) for r in rows], dtype=np.float32)

    def has(self, rows: np.ndarray) -> np.ndarray:
        self._resolve(rows)
        return np.array([int(r) in self._cosine for r in rows], dtype=bool)

    def best(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.proposals() if count <= self._count else \
            self._nearest(self._send_knn(count))
        cosine = self.at(found)
        order = np.lexsort((found, -cosine))[:count]
        return found[order], cosine[order]

    def proposals(self) -> np.ndarray:
        if self._proposed is None:
            self._proposed = self._nearest(self._knn) if self._knn is not None else \
                np.zeros(0, dtype=np.int64)
        return self._proposed

    def top(self) -> int | None:
        proposed = self.proposals()
        if not len(proposed):
            return None
        return int(proposed[int(np.argmax(self.at(proposed)))])


def as_array(value: Any) -> np.ndarray:
    """A pgvector value (numpy from the text loader, Vector from the binary one) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value,
                      dtype=np.float32)
