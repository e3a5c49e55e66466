"""Dense index: vectors by row (the lexical index's rows), exact inner product, moments.

Storage is a float32 base matrix for rows [0, B), memory-mapped when it comes from disk,
plus an in-memory "extra" matrix for rows added since (and for base rows whose vector came
later). Exact search is one blocked matrix-vector product: at 100k chunks x 384 dims that is
150 MB read per query, single-digit milliseconds here, with results exactly the brute-force
ones. Above that an approximate index (ann.py, HNSW) proposes candidates and the exact
vectors rescore them.

The index also keeps the first two moments of its vectors (sum and Gram matrix, float64), so
the mean and standard deviation of the cosines of ANY query vector over ALL vectors come in
closed form: mean = mu.q, var = q.G.q / n - mean^2. Hybrid search's z-scores need exactly
those, and this is what lets its feedback pass score only candidate rows instead of the
whole matrix a second time.
"""

from __future__ import annotations

import numpy as np

from .lexical import GrowingArray, top_k

BLOCK_ROWS = 1024


class DenseIndex:
    """Vectors by row; rows are L2-normalised so the inner product is the cosine."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim
        self._base = np.zeros((0, dim or 0), dtype=np.float32)
        self._has = GrowingArray(np.bool_)          # row has a (live) vector
        self._extra = np.zeros((0, dim or 0), dtype=np.float32)
        self._extra_rows = GrowingArray(np.int64)
        self._extra_pos: dict[int, int] = {}
        self._count = 0
        self._sum: np.ndarray | None = None
        self._gram: np.ndarray | None = None
        self._missing: np.ndarray | None = None
        self._missing_n = 0
        self.ann = None  # optional approximate index (ann.GraphSet) over saved rows
        self._half: np.ndarray | None = None  # float16 copy of the base rows (use_half)
        self._gathered: tuple[np.ndarray, np.ndarray] | None = None  # last rows rescored
        self.uncovered = np.zeros(0, dtype=np.int64)  # saved rows with a vector in no graph

    def __len__(self) -> int:
        return self._count

    # -- changes -------------------------------------------------------------------------

    def _ensure_dim(self, dim: int) -> None:
        if self.dim is None or (self._count == 0 and not len(self._base)):
            self.dim = dim
            self._base = self._base.reshape(0, dim)
            self._extra = np.zeros((0, dim), dtype=np.float32)
            self._sum, self._gram = np.zeros(dim), np.zeros((dim, dim))
        if dim != self.dim:
            raise ValueError(f"vector dimension {dim} != index dimension {self.dim}")

    def _grow_rows(self, n_rows: int) -> None:
        if n_rows > self._has.n:
            self._has.append(np.zeros(n_rows - self._has.n, dtype=bool))

    def add(self, rows, vectors: np.ndarray) -> None:
        """Add or replace the vectors of these rows."""
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = np.asarray(rows, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[0] != len(rows):
            raise ValueError(f"expected {len(rows)} vectors, got shape {vectors.shape}")
        if not len(rows):
            return
        self._ensure_dim(vectors.shape[1])
        self._grow_rows(int(rows.max()) + 1)
        replaced = rows[self._has.view[rows]]
        if len(replaced):
            self._forget(replaced)
        new_pos = []
        for i, row in enumerate(rows.tolist()):
            pos = self._extra_pos.get(row)
            if pos is None:
                self._extra_pos[row] = len(self._extra_pos)
                new_pos.append(i)
            else:
                self._extra[pos] = vectors[i]
        if new_pos:
            self._extra = _append_rows(self._extra, vectors[new_pos], self._extra_rows.n)
            self._extra_rows.append(rows[new_pos])
        self._has.view[rows] = True
        self._gathered = None
        self._count += len(rows)
        v64 = vectors.astype(np.float64)
        self._sum += v64.sum(axis=0)
        self._gram += v64.T @ v64
        self._missing = None

    def remove(self, rows) -> None:
        """Forget the vectors of these rows (dead chunks)."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[rows < self._has.n]
        rows = rows[self._has.view[rows]]
        if len(rows):
            self._forget(rows)
            self._missing = None

    def _forget(self, rows: np.ndarray) -> None:
        old = self.gather(rows).astype(np.float64)
        self._sum -= old.sum(axis=0)
        self._gram -= old.T @ old
        self._has.view[rows] = False
        self._gathered = None
        self._count -= len(rows)

    # -- persistence hooks (backends/sqlite_index.py) ------------------------------------

    def load(self, base: np.ndarray, has: np.ndarray, moments: tuple[np.ndarray, np.ndarray]
             ) -> None:
        """Start from a saved base matrix (usually a memory map) and its moments."""
        self.__init__(base.shape[1] if base.ndim == 2 and base.shape[1] else None)
        if self.dim:
            self._base = np.asarray(base)  # a plain view of the memory map (postings.py)
            self._sum, self._gram = (np.array(m, dtype=np.float64) for m in moments)
        self._has = GrowingArray(np.bool_, has)
        self._count = int(np.count_nonzero(has))

    def use_half(self, half: np.ndarray) -> None:
        """Rescore graph candidates from this float16 copy of the base rows (a memory map).

        Why: above ann.ANN_MIN a hybrid query rescores ~2,000 scattered rows (the graph's
        proposals and the lexical candidates). Read from the float32 matrix, those scattered
        reads (each maps 64 KB of file around it) make the whole matrix resident within a
        few hundred queries, on top of the graph's own float16 copy: 2.6x the raw vector bytes
        at 100k chunks. Read from this copy the float32 matrix is not touched by queries at
        all (it stays the truth for saves, moments and graph builds), half the bytes are
        resident, and numkong's float16 kernels make the products cheaper than float32 ones.
        Cosines differ from float32 ones by ~3e-4: which chunks are considered was already
        approximate here (the graph), and `bench scale` reports recall@10 against exact.
        Below ANN_MIN no copy is used, so small KBs score exactly as before."""
        # a plain view: np.memmap's Python-level __getitem__ costs more than the gather
        self._half = np.asarray(half) if len(half) == len(self._base) else None
        self._gathered = None

    @property
    def half(self) -> bool:
        return self._half is not None

    def rescore(self, rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Inner products (len(rows), len(queries)) of the rows' vectors with each query
        (0 where a row has no vector): from the float16 copy when there is one, the rows
        gathered once per row set (hybrid asks for the same rows with two query vectors,
        and for a superset after feedback), else exact float32 as `gather` + dot."""
        rows = np.asarray(rows, dtype=np.int64)
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if self._half is None or not len(rows):
            matrix = self.gather(rows)
            return np.stack([dot_rows(matrix, q) for q in queries], axis=1) if len(queries) \
                else np.zeros((len(rows), 0), np.float32)
        import numkong

        half = self._half_rows(rows)
        out = np.asarray(numkong.cdist(half, queries.astype(np.float16), metric="dot",
                                       out_dtype="float32"), dtype=np.float32)
        out = out.reshape(len(rows), len(queries))
        late = [(i, pos) for i, row in enumerate(rows.tolist())
                if (pos := self._extra_pos.get(row)) is not None] if self._extra_pos else []
        if late:  # vectors that came after the save: in memory, float32
            at = np.array([i for i, _ in late])
            out[at] = self._extra[[pos for _, pos in late]] @ queries.T
        out[~self._valid(rows)] = 0.0
        return out

    def _half_rows(self, rows: np.ndarray) -> np.ndarray:
        """float16 vectors of these rows (zeros past the copy), reusing the last row set's."""
        cached = self._gathered
        if cached is not None and (cached[0] is rows or (
                len(cached[0]) == len(rows) and np.array_equal(cached[0], rows))):
            return cached[1]  # hybrid's feedback products ask for the rows just rescored
        out = np.zeros((len(rows), self.dim), dtype=np.float16)
        need = np.ones(len(rows), dtype=bool)
        if cached is not None and len(cached[0]):
            keys, matrix = cached
            pos = np.minimum(np.searchsorted(keys, rows), len(keys) - 1)
            found = keys[pos] == rows
            at = np.flatnonzero(found)  # integer take: boolean 2-d indexing costs 4x more
            out[at] = np.take(matrix, pos[at], axis=0)
            need &= ~found
        need &= rows < len(self._half)
        at = np.flatnonzero(need)
        if len(at):
            out[at] = np.take(self._half, rows[at], axis=0)
        if len(rows) > 1 and bool(np.all(rows[1:] > rows[:-1])):  # sorted: searchable later
            self._gathered = (rows, out)
        return out

    def extra(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, vectors) held in memory on top of the base."""
        return self._extra_rows.view, self._extra[:self._extra_rows.n]

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        return self._sum, self._gram

    def has_vector(self, n_rows: int) -> np.ndarray:
        self._grow_rows(n_rows)
        return self._has.view[:n_rows]

    @property
    def base_rows(self) -> int:
        return len(self._base)

    # -- reading -------------------------------------------------------------------------

    def vector(self, row: int) -> np.ndarray | None:
        row = int(row)
        if row >= self._has.n or not self._has.view[row]:
            return None
        pos = self._extra_pos.get(row)
        if pos is not None:
            return self._extra[pos]
        if self._half is not None:  # keep the float32 matrix untouched by queries (use_half)
            return np.asarray(self._half[row], dtype=np.float32)
        return np.asarray(self._base[row])

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """Vectors of these rows (zeros where a row has none)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros((len(rows), self.dim or 0), dtype=np.float32)
        if not len(rows) or not self.dim:
            return out
        in_base = rows < len(self._base)
        if in_base.any():
            out[in_base] = self._base[rows[in_base]]
        if self._extra_pos:
            for i, row in enumerate(rows.tolist()):
                pos = self._extra_pos.get(row)
                if pos is not None:
                    out[i] = self._extra[pos]
        out[~self._valid(rows)] = 0.0
        return out

    def _valid(self, rows: np.ndarray) -> np.ndarray:
        valid = np.zeros(len(rows), dtype=bool)
        inside = rows < self._has.n
        valid[inside] = self._has.view[rows[inside]]
        return valid

    def row_scores(self, query: np.ndarray, n_rows: int) -> np.ndarray:
        """Cosine of every row with the query; rows without a vector score 0.

        The product runs in blocks of BLOCK_ROWS: above a size threshold OpenBLAS hands one
        big matrix-vector product to several threads, and on a busy machine waking them
        cost ~12 ms per query at 10k chunks, against 0.6 ms for the same work in blocks
        that stay on the calling thread.
        """
        out = np.zeros(n_rows, dtype=np.float32)
        if not self._count:
            return out
        query = np.asarray(query, dtype=np.float32)
        base_n = min(len(self._base), n_rows)
        dot_rows(self._base[:base_n], query, out[:base_n])
        if self._extra_rows.n:
            rows = self._extra_rows.view
            scores = dot_rows(self._extra[:len(rows)], query)
            keep = rows < n_rows
            out[rows[keep]] = scores[keep]
        missing = self.missing_rows(n_rows)
        if len(missing):
            out[missing] = 0.0
        return out

    def missing_rows(self, n_rows: int) -> np.ndarray:
        """Rows below n_rows without a live vector."""
        if self._missing is None or self._missing_n != n_rows:
            self._missing = np.flatnonzero(~self.has_vector(n_rows))
            self._missing_n = n_rows
        return self._missing

    def scores(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows that have a vector, cosine per such row)."""
        rows = np.flatnonzero(self._has.view)
        return rows, self.row_scores(query_vector, self._has.n)[rows]

    def moments_of(self, query: np.ndarray) -> tuple[float, float]:
        """(mean, std) of the query's cosine over all vectors, in closed form."""
        return closed_form_moments(self._sum, self._gram, self._count, query)

    def best_rows(self, scores: np.ndarray, count: int) -> np.ndarray:
        """The `count` rows with a vector that score highest in a row_scores vector."""
        best = top_k(scores, count)
        return best[self._valid(best)]

    def candidates(self, query: np.ndarray, count: int, n_rows: int,
                   expansion: int | None = None) -> np.ndarray:
        """Rows of about the `count` best vectors: exact over all rows, or proposed by the
        approximate index and then the in-memory rows."""
        if self.ann is None:
            return self.best_rows(self.row_scores(query, n_rows), count)
        extra = self._extra_rows.view
        outside = np.union1d(self.uncovered, extra) if len(extra) else self.uncovered
        outside = outside[outside < n_rows]
        outside = outside[self._valid(outside)]
        if len(outside) > count:  # many rows in no graph yet (a long ingest): their best
            outside = outside[top_k(self._exact_scores(outside, query), count)]
        rows = self.ann.search(query, count) if expansion is None else \
            self.ann.search(query, count, expansion)
        rows = rows[rows < n_rows]
        return np.union1d(rows[self._valid(rows)], outside)

    def _exact_scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Cosines of these rows, gathered in blocks (bounded memory for any count)."""
        if self._half is not None:
            return self.rescore(rows, query)[:, 0]
        out = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), 16 * BLOCK_ROWS):
            part = rows[start:start + 16 * BLOCK_ROWS]
            out[start:start + len(part)] = dot_rows(self.gather(part), query)
        return out


def closed_form_moments(total: np.ndarray | None, gram: np.ndarray | None, count: int,
                        query: np.ndarray) -> tuple[float, float]:
    """(mean, std) of the query's cosine over `count` vectors with this sum and Gram matrix
    (float64): mean = mu.q, var = q.G.q / n - mean^2."""
    if not count:
        return 0.0, 0.0
    q = np.asarray(query, dtype=np.float64)
    mean = float(total @ q) / count
    variance = float(q @ gram @ q) / count - mean * mean
    return mean, max(variance, 0.0) ** 0.5


def dot_rows(matrix: np.ndarray, vector: np.ndarray, out: np.ndarray | None = None
             ) -> np.ndarray:
    """matrix @ vector in blocks of BLOCK_ROWS (see DenseIndex.row_scores for why)."""
    out = np.empty(len(matrix), dtype=np.float32) if out is None else out
    for start in range(0, len(matrix), BLOCK_ROWS):
        np.dot(matrix[start:start + BLOCK_ROWS], vector, out=out[start:start + BLOCK_ROWS])
    return out


def _append_rows(matrix: np.ndarray, rows: np.ndarray, used: int) -> np.ndarray:
    """matrix[:used] followed by rows, with doubling capacity (returns the new buffer)."""
    need = used + len(rows)
    if need > len(matrix):
        grown = np.zeros((max(need, 2 * len(matrix), 256), matrix.shape[1]), dtype=np.float32)
        grown[:used] = matrix[:used]
        matrix = grown
    matrix[used:need] = rows
    return matrix
