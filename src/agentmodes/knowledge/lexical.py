"""BM25 lexical index over chunks: immutable segments plus a growing tail, rows in one table.

Why our own postings rather than bm25s, SQLite FTS5 or Tantivy (measured side by side,
benchmarks/results/index_candidates.md): hybrid search and calibrated confidence need more
than a top-k list: the BM25 score of EVERY chunk (its mean and spread are the z-score the
fusion and the confidence model are fitted on), the document frequency of a hit's terms
(pseudo-relevance feedback) and each hit's term set (coverage). bm25s computes exactly those
scores, but its index is immutable and precomputes weights that depend on corpus-wide
statistics, so every added document meant a rebuild from scratch. FTS5 and Tantivy are
incremental but return only ranked top lists and use BM25 with other constants (k1=1.2),
which changes the rankings our fusion weights and confidence were fitted on.

So the index is a list of immutable `Segment`s (postings.py: term keys, posting rows, tf,
document lengths, a forward index), memory-mapped when they come from disk, plus a tail of
recently added rows that is frozen into a segment when it grows. Scoring is the Lucene
variant of BM25 with bm25s's defaults (k1=1.5, b=0.75), computed at query time from tf and
document length with the live corpus statistics, so results equal bm25s+stemming on our
benchmarks (nDCG@10 HotpotQA 0.774, Cranfield 0.365, XQuAD-en 0.968) while add and remove are
incremental. A removed chunk's row is marked dead: it scores 0 and leaves the statistics at
once; its postings go when the rows are compacted (document frequencies count dead rows until
then, as in Lucene).

Rows: every chunk indexed gets a row (append order); `row_ids()[row]` is its chunk id. The
dense index (dense.py) uses the same row numbers, so hybrid search needs no id alignment.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np

from .analysis import LANGUAGES, Analyzer, Language
from .postings import Segment

TAIL_ROWS = 20_000  # a longer tail is frozen into a segment (re-freezing it costs O(tail))


LARGE_ROWS = 50_000  # above (ann.ANN_MIN): shortcuts that may order ties or round differently
PREFILTER_BLOCKS = 4     # blocks per wanted index whose maxima give that threshold


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first (argpartition: O(n) not O(n log n))."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if n > LARGE_ROWS and PREFILTER_BLOCKS * k * 8 <= n:
        idx = _prefiltered(scores, k)
    elif k < n:
        idx = np.argpartition(-scores, k - 1)[:k]
    else:
        idx = np.arange(n)
    return idx[np.argsort(-scores[idx], kind="stable")]


def _prefiltered(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best of a long vector without partitioning all of it (0.4 -> 0.2 ms at 100k).

    The k-th largest of the maxima of disjoint blocks is a lower bound of the k-th largest
    score (k distinct scores reach it), so everything below it can be dropped with one
    vectorised comparison, and argpartition sorts out the few that are left. Only above
    LARGE_ROWS: which of several tied scores fills the last place may differ from a
    partition of the whole vector, and smaller indexes keep their results bit for bit."""
    blocks = PREFILTER_BLOCKS * k
    width = scores.shape[0] // blocks
    maxima = scores[:blocks * width].reshape(blocks, width).max(axis=1)
    bound = np.partition(maxima, blocks - k)[blocks - k]
    idx = np.flatnonzero(scores >= bound)
    if len(idx) > k:
        idx = idx[np.argpartition(-scores[idx], k - 1)[:k]]
    return idx


class GrowingArray:
    """An append-only 1-d numpy array with amortised doubling (row ids, alive flags)."""

    def __init__(self, dtype, initial: np.ndarray | None = None) -> None:
        data = np.asarray(initial if initial is not None else np.zeros(0), dtype=dtype)
        self._data = np.array(data, dtype=dtype)  # own copy: a memory map is read-only
        self.n = len(data)

    def append(self, values) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        need = self.n + len(values)
        if need > len(self._data):
            grown = np.zeros(max(need, 2 * len(self._data), 1024), dtype=self._data.dtype)
            grown[:self.n] = self._data[:self.n]
            self._data = grown
        self._data[self.n:need] = values
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self._data[:self.n]


class LexicalIndex:
    """BM25 (Lucene variant) over chunk rows with incremental add/remove."""

    def __init__(self, analyzer: Analyzer | None = None, k1: float = 1.5, b: float = 0.75) -> None:
        self.analyzer = analyzer or Analyzer()
        self.k1, self.b = k1, b
        self.segments: list[Segment] = []     # frozen, in row order
        self._offsets: list[int] = []         # first row of each segment
        self._tail: list = []                 # key lists (or int64 arrays) of rows after the segments
        self._tail_langs: list[int] = []
        self._tail_segment: Segment | None = None
        self._row_ids = GrowingArray(np.int64)
        self._alive = GrowingArray(np.bool_)
        self._sorted_rows = 0                 # rows [0, n) have strictly ascending ids
        self._row_of: dict[int, int] = {}     # chunk id -> live row, for the other rows
        self._live = 0
        self._total_len = 0
        self._languages: Counter[Language] = Counter()
        self._alive_rows: np.ndarray | None = None
        self._dead: np.ndarray | None = None
        self._norms: dict[int, tuple] = {}    # id(segment) -> (segment, stats, row norms)

    # -- size and rows -------------------------------------------------------------------

    def __len__(self) -> int:
        return self._live

    @property
    def n_rows(self) -> int:
        return self._row_ids.n

    def row_ids(self) -> np.ndarray:
        """Chunk id of each row (dead rows included; see alive_rows)."""
        return self._row_ids.view

    def alive_mask(self) -> np.ndarray:
        return self._alive.view

    def alive_rows(self) -> np.ndarray:
        if self._alive_rows is None:
            self._alive_rows = np.flatnonzero(self._alive.view)
        return self._alive_rows

    def dead_rows(self) -> np.ndarray:
        if self._dead is None:
            self._dead = np.flatnonzero(~self._alive.view)
        return self._dead

    def rows_of(self, ids) -> np.ndarray:
        """Live row of each chunk id (-1 where the chunk is not indexed)."""
        ids = np.asarray(list(ids), dtype=np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        if self._sorted_rows and len(ids):
            base = self._row_ids.view[:self._sorted_rows]
            pos = np.minimum(np.searchsorted(base, ids), self._sorted_rows - 1)
            hit = (base[pos] == ids) & self._alive.view[pos]
            out[hit] = pos[hit]
        if self._row_of:
            for i, chunk_id in enumerate(ids.tolist()):
                row = self._row_of.get(chunk_id)
                if row is not None:
                    out[i] = row
        return out

    @property
    def majority_language(self) -> Language:
        """The corpus's main language: the fallback for queries without evidence."""
        if not self._languages or not any(self._languages.values()):
            return self.analyzer.fallback
        return self._languages.most_common(1)[0][0]

    # -- changes -------------------------------------------------------------------------

    def add(self, ids: list[int], texts: list[str]) -> None:
        """Analyse and index chunk texts (a chunk id already indexed is replaced)."""
        analysed = [self.analyzer.analyse_keys(text) for text in texts]
        self.add_analysed(ids, [keys for _, keys in analysed], [lang for lang, _ in analysed])

    def add_analysed(self, ids: list[int], key_lists: list[list[int]],
                     languages: list[Language]) -> None:
        self.remove(ids)
        start = self.n_rows
        self._row_ids.append(ids)
        self._alive.append(np.ones(len(ids), dtype=bool))
        for offset, chunk_id in enumerate(ids):
            self._row_of[int(chunk_id)] = start + offset
        self._tail.extend(key_lists)
        self._tail_langs.extend(LANGUAGES.index(lang) for lang in languages)
        self._tail_segment = None
        self._live += len(ids)
        self._total_len += sum(map(len, key_lists))
        self._languages.update(languages)
        self._alive_rows = self._dead = None
        if len(self._tail) >= TAIL_ROWS:
            self.freeze()

    def remove(self, ids) -> list[int]:
        """Mark the rows of these chunks dead; returns the rows removed."""
        rows = [int(r) for r in self.rows_of(ids) if r >= 0]
        alive = self._alive.view
        for row in rows:
            if not alive[row]:
                continue
            alive[row] = False
            self._row_of.pop(int(self._row_ids.view[row]), None)
            segment, local = self._locate(row)
            self._live -= 1
            self._total_len -= int(segment.doclen[local])
            self._languages[LANGUAGES[int(segment.langs[local])]] -= 1
        if rows:
            self._alive_rows = self._dead = None
        return rows

    def freeze(self) -> None:
        """Turn the tail into a segment; merge small segments so their number stays low.

        Merging the last two while the older is at most twice the newer keeps sizes
        geometric, so a row is rewritten O(log n) times (about 3.4 times per row over a
        100k-chunk ingest, 5.7 over 1M, with its 20k-row tail and 10 s saves) and each merge
        costs O(postings) (Segment.merge): the ingest's index work grows as n log n."""
        if not self._tail:
            return
        self._offsets.append(self.n_rows - len(self._tail))
        self.segments.append(self._frozen_tail())
        self._tail, self._tail_langs, self._tail_segment = [], [], None
        while len(self.segments) >= 2 and self.segments[-2].n <= 2 * self.segments[-1].n:
            merged = Segment.merge(self.segments[-2:])
            del self.segments[-2:]
            del self._offsets[-1]
            self.segments.append(merged)

    def _frozen_tail(self) -> Segment:
        if self._tail_segment is None:
            self._tail_segment = Segment.build(self._tail, self._tail_langs)
        return self._tail_segment

    def _parts(self) -> list[tuple[int, Segment]]:
        parts = list(zip(self._offsets, self.segments))
        if self._tail:
            parts.append((self.n_rows - len(self._tail), self._frozen_tail()))
        return parts

    def _locate(self, row: int) -> tuple[Segment, int]:
        parts = self._parts()
        i = bisect.bisect_right([offset for offset, _ in parts], row) - 1
        return parts[i][1], row - parts[i][0]

    # -- persistence hooks (backends/sqlite_index.py) ------------------------------------

    def load(self, segments: list[tuple[int, Segment]], row_ids: np.ndarray,
             dead: np.ndarray) -> None:
        """Start from saved segments (rows with strictly ascending chunk ids)."""
        self.__init__(self.analyzer, self.k1, self.b)
        self._offsets = [offset for offset, _ in segments]
        self.segments = [segment for _, segment in segments]
        self._row_ids = GrowingArray(np.int64, row_ids)
        alive = np.ones(len(row_ids), dtype=bool)
        alive[np.asarray(dead, dtype=np.int64)] = False
        self._alive = GrowingArray(np.bool_, alive)
        self._sorted_rows = len(row_ids)
        self._live = int(alive.sum())
        for segment, offset in zip(self.segments, self._offsets):
            live = alive[offset:offset + segment.n]
            self._total_len += int(np.asarray(segment.doclen, dtype=np.int64)[live].sum())
            counts = np.bincount(np.asarray(segment.langs)[live], minlength=len(LANGUAGES))
            self._languages.update({LANGUAGES[i]: int(c) for i, c in enumerate(counts) if c})

    def parts(self) -> list[tuple[int, Segment]]:
        """(first row, segment) of every segment, the tail frozen last."""
        return self._parts()

    # -- scoring -------------------------------------------------------------------------

    def query_terms(self, query: str) -> list[int]:
        """The query's term keys (analysis.term_key), analysed like the corpus."""
        return self.analyzer.analyse_keys(query, fallback=self.majority_language)[1]

    def row_scores(self, keys: list[int]) -> np.ndarray:
        """BM25 score of every row for these term keys (repeats weigh again, as in bm25s);
        dead rows score 0."""
        out = np.zeros(self.n_rows, dtype=np.float32)
        if not keys or not self._live:
            return out
        unique, repeats = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
        parts = self._parts()
        spans = [segment.find(unique) for _, segment in parts]
        df = sum(stop - start for start, stop in spans)
        n = self._live
        idf = np.log1p((n - df + 0.5) / (df + 0.5)) * repeats
        norm_a = self.k1 * (1.0 - self.b)
        norm_b = self.k1 * self.b / (self._total_len / n if self._total_len else 1.0)
        norms = self._row_norms(parts, norm_a, norm_b)
        for (offset, segment), (start, stop), norm in zip(parts, spans, norms):
            view = out[offset:offset + segment.n]  # indexed by the segment's own rows
            for j in np.flatnonzero(stop > start).tolist():
                rows = segment.rows[start[j]:stop[j]]
                tf = segment.tfs[start[j]:stop[j]].astype(np.float32)
                # take and add.at: 3x faster than fancy indexing with uint32 rows (the same
                # float32 additions: rows are distinct within a term)
                np.add.at(view, rows, np.float32(idf[j]) * tf / (tf + norm.take(rows)))
        dead = self.dead_rows()
        if len(dead):
            out[dead] = 0.0
        return out

    def _row_norms(self, parts: list[tuple[int, Segment]], norm_a: float, norm_b: float
                   ) -> list[np.ndarray]:
        """k1 * (1 - b + b * doclen / avgdl) of every row, per part (float32, the values the
        per-posting formula gives). Kept between queries until the corpus statistics or the
        segments change: it saves a gather and two passes over every posting a query reads."""
        out, kept = [], {}
        for _, segment in parts:
            entry = self._norms.get(id(segment))
            if entry is None or entry[0] is not segment or entry[1] != (norm_a, norm_b):
                doclen = np.asarray(segment.doclen).astype(np.float32)
                entry = (segment, (norm_a, norm_b), norm_a + norm_b * doclen)
            kept[id(segment)] = entry
            out.append(entry[2])
        self._norms = kept
        return out

    def scores(self, query: str, terms: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(chunk id per row, BM25 score per row) for every row; dead rows score 0."""
        keys = self.query_terms(query) if terms is None else terms
        return self.row_ids(), self.row_scores(keys)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (chunk id, score) with score > 0, best first."""
        ids, scores = self.scores(query)
        best = top_k(scores, k)
        return [(int(ids[i]), float(scores[i])) for i in best if scores[i] > 0]

    def doc_freqs(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        return sum((segment.doc_freqs(keys) for _, segment in self._parts()),
                   np.zeros(len(keys), dtype=np.int64))

    def row_keys(self, row: int) -> np.ndarray:
        segment, local = self._locate(int(row))
        return segment.row_keys(local)

    def expansion_terms(self, row: int, n: int) -> list[int]:
        """The row's n rarest distinct terms (lowest document frequency first).

        Used for pseudo-relevance feedback: the rare words of the best hit (names, the
        bridge entity of a multi-hop question) are what a second lexical pass should look
        for; capping them keeps that pass as cheap as a normal query.
        """
        if n <= 0:
            return []
        keys = self.row_keys(row)
        if not len(keys):
            return []
        order = np.argsort(self.doc_freqs(keys), kind="stable")  # ties: first occurrence
        return keys[order[:n]].tolist()

    def coverage(self, terms: list[int], rows) -> np.ndarray:
        """Share of the distinct query terms that occur in each given row (0..1).

        Unlike a BM25 score this does not depend on corpus size, which makes it a useful
        confidence feature in a knowledge base of five chunks as in one of 100k. Looked up
        in the terms' posting lists (binary search; the query just read them) rather than
        in each row's forward index, whose pages a search would otherwise bring in (a
        memory-mapped segment's fwd_keys were 40% of its bytes, resident after a few
        hundred searches at 100k chunks).
        """
        distinct = np.unique(np.asarray(terms, dtype=np.int64))
        rows = np.asarray(rows, dtype=np.int64)
        found = np.zeros(len(rows), dtype=np.int64)
        if not len(distinct) or not len(rows):
            return found.astype(np.float32)
        for offset, segment in self._parts():
            inside = np.flatnonzero((rows >= offset) & (rows < offset + segment.n))
            if not len(inside):
                continue
            local = (rows[inside] - offset).astype(segment.rows.dtype)
            start, stop = segment.find(distinct)
            for j in np.flatnonzero(stop > start).tolist():
                postings = segment.rows[start[j]:stop[j]]  # ascending within a term
                pos = np.minimum(np.searchsorted(postings, local), len(postings) - 1)
                found[inside[postings[pos] == local]] += 1
        return (found / len(distinct)).astype(np.float32)
