"""The lexical index of a PostgreSQL knowledge base: postings in a table, BM25 in SQL.

The KB's own analysis (analysis.py: German/English detection, Snowball stemming, stop words,
diacritics folding, 64-bit term keys) runs in the writing process when a document is stored,
and its result goes into the same transaction as the document's chunks:

- chunks.terms / lang / doclen: each chunk's distinct term keys in order of first occurrence
  (the forward index: pseudo-relevance feedback picks a hit's rarest terms, coverage compares
  sets), its language and its length in terms;
- postings (term, chunk_id, tf, doclen): the inverted index. Its primary key is the btree
  (term, chunk_id) INCLUDE (tf, doclen), so the postings of one query term are one
  index-only range scan, without touching the table;
- terms (term, df): document frequencies; meta's lexical_* rows: live chunks, total length
  and chunks per language (the corpus statistics BM25 and the query language need).

Why not a tsvector with a GIN index: GIN finds the chunks containing a term but keeps no term
frequency, and ts_rank is not BM25; reading tf back out of each matching tsvector costs more
than the posting list itself. Scoring here is the Lucene BM25 of lexical.py (k1 1.5, b 0.75)
with the same float32 arithmetic in the same order (per chunk, the query terms in ascending
key order), so a PostgreSQL KB gives the scores of the SQLite file to the last bit, and the
mean and spread over every chunk come from sums over the same rows.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from ..analysis import LANGUAGES, Analyzer
from ..chunking import Chunk
from ..fusion import Moments

K1, B = 1.5, 0.75                     # lexical.LexicalIndex's defaults
STATS = ("lexical_chunks", "lexical_length", "lexical_en", "lexical_de")

# One query term's weight for one posting, in float4 exactly as lexical.py computes it in
# float32: idf * tf / (tf + (k1 (1 - b) + k1 b / avgdl * dl)). Terms arrive in ascending key
# order and the LATERAL subquery runs once per term (OFFSET 0 keeps the planner from turning
# it into a hash join), so each chunk's float4 SUM adds them in the order numpy does, as long
# as the grouping is hashed (the search sets enable_sort off: a sort would reorder them).
_WEIGHT = ("q.w * p.tf::real / (p.tf::real + (%(norm_a)s::real + %(norm_b)s::real * "
           "p.doclen::real))")
_TERMS = "unnest(%(terms)s::bigint[], %(weights)s::real[]) AS q(term, w)"
_SCORES = (f"SELECT p.chunk_id, SUM({_WEIGHT}) AS score, COUNT(*) AS matched FROM {_TERMS} "
           "CROSS JOIN LATERAL "
           "(SELECT chunk_id, tf, doclen FROM postings WHERE postings.term = q.term{only} OFFSET 0) p "
           "GROUP BY p.chunk_id")
# Corpus sums and count of matching chunks first (chunk_id NULL), then the best candidates.
RUN_SQL = (f"WITH s AS MATERIALIZED ({_SCORES.format(only='')}) "
           "SELECT NULL::bigint, SUM(score::float8), SUM(score::float8 * score::float8), "
           "COUNT(*) FROM s UNION ALL (SELECT chunk_id, score, matched, NULL FROM s "
           "WHERE score > 0 ORDER BY score DESC, chunk_id LIMIT %(limit)s)")
SCORES_OF_SQL = _SCORES.format(only=" AND postings.chunk_id = ANY(%(ids)s)")


# -- writing ------------------------------------------------------------------------------

def analyse(analyzer: Analyzer, chunks: list[Chunk]) -> list[tuple[int, int, list[int], list[int]]]:
    """(language index, length, distinct keys in first-occurrence order, their tf) per chunk."""
    out = []
    for chunk in chunks:
        language, keys = analyzer.analyse_keys(chunk.index_text)
        counts = Counter(keys)                 # insertion order: first occurrence
        out.append((LANGUAGES.index(language), len(keys), list(counts), list(counts.values())))
    return out


# Postings as four parallel arrays; `owner` is the chunk's position in its document (new
# documents: the ids are drawn inside the statement) or its id (backfill).
_POSTINGS = ("unnest(%(p_owner)s::bigint[], %(p_term)s::bigint[], %(p_tf)s::integer[], "
             "%(p_len)s::integer[]) AS p(owner, term, tf, doclen)")
# A new document, its chunks and their postings in one statement (one round trip, no ids
# travelling back and forth); chunk ids are drawn in position order.
INSERT_DOCUMENT_SQL = (
    "WITH d AS (INSERT INTO documents (path, root, title, content_hash, mtime, size) VALUES "
    "(%(path)s, %(root)s, %(title)s, %(content_hash)s, %(mtime)s, %(size)s) RETURNING id), "
    "c AS (INSERT INTO chunks (doc_id, position, title, heading_path, text, text_hash, lang, "
    "doclen, terms) SELECT d.id, u.position, u.title, u.heading::jsonb, u.text, u.text_hash, "
    "u.lang, u.doclen, u.terms::bigint[] FROM d, unnest(%(positions)s::integer[], "
    "%(titles)s::text[], %(headings)s::text[], %(texts)s::text[], %(hashes)s::text[], "
    "%(langs)s::smallint[], %(lengths)s::integer[], %(terms)s::text[]) WITH ORDINALITY AS "
    "u(position, title, heading, text, text_hash, lang, doclen, terms, n) ORDER BY u.n "
    "RETURNING id, position) "
    "INSERT INTO postings (term, chunk_id, tf, doclen) SELECT p.term, c.id, p.tf, p.doclen "
    f"FROM c JOIN {_POSTINGS} ON p.owner = c.position")
_INSERT_POSTINGS_SQL = ("INSERT INTO postings (term, chunk_id, tf, doclen) SELECT p.term, "
                        f"p.owner, p.tf, p.doclen FROM {_POSTINGS}")


def _postings(owners: list[int], analysed: list[tuple]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {"p_owner": [], "p_term": [], "p_tf": [], "p_len": []}
    for owner, (_, length, keys, tfs) in zip(owners, analysed):
        out["p_owner"] += [owner] * len(keys)
        out["p_term"] += keys
        out["p_tf"] += tfs
        out["p_len"] += [length] * len(keys)
    return out


def document_params(path: str, root: str, title: str, content_hash: str, mtime: float,
                    size: int, chunks: list[Chunk], analysed: list[tuple]) -> dict:
    """The parameters of INSERT_DOCUMENT_SQL."""
    return {"path": path, "root": root, "title": title, "content_hash": content_hash,
            "mtime": mtime, "size": size, "positions": [c.position for c in chunks],
            "titles": [c.title for c in chunks],
            "headings": [json.dumps(c.heading_path, ensure_ascii=False) for c in chunks],
            "texts": [c.text for c in chunks], "hashes": [c.text_hash for c in chunks],
            "langs": [a[0] for a in analysed], "lengths": [a[1] for a in analysed],
            "terms": ["{" + ",".join(map(str, a[2])) + "}" for a in analysed],
            **_postings([c.position for c in chunks], analysed)}


def count_terms(conn: Any, analysed: list[tuple]) -> None:
    """Document frequencies and corpus statistics of newly indexed chunks (no reads: these
    statements can go out in the same round trip as the document)."""
    if not analysed:
        return
    df: Counter[int] = Counter()
    for _, _, keys, _ in analysed:
        df.update(keys)
    conn.execute("INSERT INTO terms (term, df) SELECT * FROM unnest(%s::bigint[], %s::integer[]) "
                 "ON CONFLICT (term) DO UPDATE SET df = terms.df + excluded.df",
                 (list(df), list(df.values())))
    languages = Counter(a[0] for a in analysed)
    conn.execute(_SHIFT_STATS.format(values="SELECT %s, %s, %s, %s"),
                 (len(analysed), sum(a[1] for a in analysed), languages[0], languages[1]))


_SHIFT_STATS = ("UPDATE meta m SET value = (m.value::bigint + CASE m.key WHEN 'lexical_chunks' "
                "THEN s.n WHEN 'lexical_length' THEN s.length WHEN 'lexical_en' THEN s.en "
                "ELSE s.de END)::text FROM ({values}) AS s(n, length, en, de) WHERE m.key IN "
                "('lexical_chunks', 'lexical_length', 'lexical_en', 'lexical_de')")


def unindex_chunks(conn: Any, where: str, params: tuple) -> None:
    """Take the chunks matching `where` (SQL over chunks) out of the lexical index; the
    caller deletes the chunks themselves afterwards, in the same transaction. Nothing is
    read back, so these statements pipeline."""
    chunks = f"SELECT id, terms, lang, doclen FROM chunks WHERE ({where}) AND terms IS NOT NULL"
    conn.execute(_SHIFT_STATS.format(
        values=f"SELECT -COUNT(*), -COALESCE(SUM(doclen), 0), -COUNT(*) FILTER (WHERE lang = "
               f"0), -COUNT(*) FILTER (WHERE lang = 1) FROM ({chunks}) g"), params)
    conn.execute(f"DELETE FROM postings p USING (SELECT c.id, unnest(c.terms) AS term FROM "
                 f"({chunks}) c) g WHERE p.term = g.term AND p.chunk_id = g.id", params)
    gone = f"SELECT unnest(c.terms) AS term, COUNT(*) AS n FROM ({chunks}) c GROUP BY 1"
    conn.execute(f"UPDATE terms t SET df = t.df - g.n FROM ({gone}) g WHERE t.term = g.term",
                 params)
    conn.execute(f"DELETE FROM terms t USING ({gone}) g WHERE t.term = g.term AND t.df <= 0",
                 params)


def backfill(conn: Any, analyzer: Analyzer, batch: int = 2_000) -> int:
    """Analyse chunks stored before the lexical index existed (schema version 1)."""
    done = 0
    while rows := conn.execute("SELECT id, title, heading_path, text FROM chunks WHERE terms IS "
                               "NULL ORDER BY id LIMIT %s", (batch,)).fetchall():
        chunks = [Chunk(0, title, heading if isinstance(heading, list) else [], text)
                  for _, title, heading, text in rows]
        analysed = analyse(analyzer, chunks)
        ids = [row[0] for row in rows]
        with conn.cursor() as cur:
            cur.executemany("UPDATE chunks SET lang = %s, doclen = %s, terms = %s WHERE id = %s",
                            [(a[0], a[1], a[2], i) for i, a in zip(ids, analysed)])
        conn.execute(_INSERT_POSTINGS_SQL, _postings(ids, analysed))
        count_terms(conn, analysed)
        done += len(ids)
    return done


# -- scoring ------------------------------------------------------------------------------

class LexicalStats:
    """The corpus statistics BM25 needs, read from meta with the revision."""

    def __init__(self, values: dict[str, str]) -> None:
        self.chunks, self.length, self.en, self.de = (int(values.get(k) or 0) for k in STATS)

    def majority(self, fallback: str) -> str:
        if not self.en and not self.de:
            return fallback
        return "en" if self.en >= self.de else "de"


DF_SQL = "SELECT term, df FROM terms WHERE term = ANY(%s)"


class SqlLexicalRun:
    """BM25 of one query (LexicalRun, retriever.py): corpus moments and the best candidates
    from one SQL statement, sent at once and read when first needed (the search pipelines
    its statements); scores of other chunks on request (0 for a chunk no term matches).
    `matched(rows)`: how many distinct query terms each row contains (the coverage)."""

    def __init__(self, ctx: Any, stats: LexicalStats, terms: list[int], limit: int) -> None:
        self._ctx, self._limit = ctx, limit
        self._scores: dict[int, tuple[float, int]] = {}
        self._ranked = np.zeros(0, dtype=np.int64)
        self._complete = True          # every chunk with a score > 0 is in _scores
        self._params: dict | None = None
        self._pending: list[Any] = []  # cursors of statements sent and not read yet
        self._head: Any = None
        self._moments = Moments(0.0, 0.0)
        self._n = n = stats.chunks
        unique, repeats = np.unique(np.asarray(terms, dtype=np.int64), return_counts=True)
        if not len(unique) or not n:
            return
        df_of = ctx.doc_freqs(unique.tolist())
        df = np.array([df_of.get(int(t), 0) for t in unique], dtype=np.int64)
        present = df > 0
        if not present.any():
            return
        idf = (np.log1p((n - df + 0.5) / (df + 0.5)) * repeats)[present]
        avg = stats.length / n if stats.length else 1.0
        self._params = {"terms": unique[present].tolist(),
                        "weights": [float(np.float32(v)) for v in idf],
                        "norm_a": K1 * (1.0 - B), "norm_b": K1 * B / avg}
        self._head = ctx.send(RUN_SQL, {**self._params, "limit": limit})

    def _read_head(self) -> None:
        if self._head is None:
            return
        rows, self._head = self._head.fetchall(), None
        head = next(r for r in rows if r[0] is None)
        best = sorted(((r[0], r[1], int(r[2])) for r in rows if r[0] is not None),
                      key=lambda row: (-row[1], row[0]))
        self._scores.update((i, (score, matched)) for i, score, matched in best)
        self._ranked = np.array([row[0] for row in best], dtype=np.int64)
        self._complete = int(head[3]) <= len(best)
        self._moments = Moments.from_sums(float(head[1] or 0.0), float(head[2] or 0.0), self._n)

    @property
    def moments(self) -> Moments:
        self._read_head()
        return self._moments

    def request(self, rows: np.ndarray) -> None:
        self._read_head()
        missing = [int(r) for r in rows if int(r) not in self._scores]
        if missing and not self._complete:
            self._pending.append(self._ctx.send(SCORES_OF_SQL, {**self._params, "ids": missing}))
        for chunk_id in missing:
            self._scores.setdefault(chunk_id, (0.0, 0))   # overwritten when the answer comes

    def _known(self, rows: np.ndarray) -> list[tuple[float, int]]:
        self.request(rows)
        for cursor in self._pending:
            self._scores.update((i, (score, int(matched))) for i, score, matched in
                                cursor.fetchall())
        self._pending.clear()
        return [self._scores[int(r)] for r in rows]

    def at(self, rows: np.ndarray) -> np.ndarray:
        return np.array([score for score, _ in self._known(rows)], dtype=np.float32)

    def matched(self, rows: np.ndarray) -> np.ndarray:
        return np.array([count for _, count in self._known(rows)], dtype=np.int64)

    def candidates(self, count: int) -> np.ndarray:
        self._read_head()
        if count > self._limit and not self._complete and self._params is not None:
            self._limit, self._head = count, self._ctx.send(RUN_SQL, {**self._params,
                                                                       "limit": count})
            self._read_head()
        return self._ranked[:count]

    def top(self) -> int | None:
        self._read_head()
        return int(self._ranked[0]) if len(self._ranked) else None
