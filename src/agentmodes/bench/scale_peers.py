"""The scale benchmark's peers for lexical search, on exactly the KB's chunk text.

- SQLite FTS5 over our own analysed terms (the same stemming, stop words and folding),
  ranked by FTS5's bm25(): what the KB would be if its lexical index lived in its file.
- bm25s with its own tokenizer and the English Snowball stemmer, saved and loaded with
  mmap=True: the library our index replaced, used the way its docs recommend at scale.

Each function runs inside a scale_probe process; `build` reads the text from the KB file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import numpy as np


def _texts(kb: str) -> list[str]:
    from ..knowledge.chunking import index_text

    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        return [index_text(t, json.loads(h), x) for t, h, x in
                conn.execute("SELECT title, heading_path, text FROM chunks ORDER BY id")]
    finally:
        conn.close()


def _fts_query(terms: list[str]) -> str:
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(terms)) or '""'


def fts5_build(kb: str, out: str) -> dict:
    from ..knowledge.analysis import Analyzer

    texts = _texts(kb)
    start = time.perf_counter()
    analyzer = Analyzer()
    Path(out).unlink(missing_ok=True)
    conn = sqlite3.connect(out)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE VIRTUAL TABLE chunks USING fts5(terms, tokenize='unicode61')")
    with conn:
        for first in range(0, len(texts), 10_000):
            conn.executemany("INSERT INTO chunks(rowid, terms) VALUES (?, ?)",
                             [(first + i + 1, " ".join(analyzer.terms(t)))
                              for i, t in enumerate(texts[first:first + 10_000])])
    conn.close()
    return {"build_s": time.perf_counter() - start, "disk_mb": Path(out).stat().st_size / 2**20}


def fts5_search(conn: sqlite3.Connection, analyzer, query: str, k: int) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT rowid FROM chunks WHERE chunks MATCH ? ORDER BY rank LIMIT ?",
        (_fts_query(analyzer.terms(query)), k))]


def fts5_cold(index: str, query: str) -> dict:
    from ..knowledge.analysis import Analyzer

    start = time.perf_counter()
    conn = sqlite3.connect(index)
    fts5_search(conn, Analyzer(), query, 10)
    return {"open_first_search_s": time.perf_counter() - start}


def fts5_warm(index: str, queries: list[str]) -> dict:
    from ..knowledge.analysis import Analyzer

    conn, analyzer = sqlite3.connect(index), Analyzer()
    fts5_search(conn, analyzer, queries[0], 10)
    times = []
    for query in queries:
        start = time.perf_counter()
        fts5_search(conn, analyzer, query, 10)
        times.append(time.perf_counter() - start)
    return _percentiles(times)


def bm25s_build(kb: str, out: str) -> dict:
    import bm25s
    import Stemmer

    texts = _texts(kb)
    start = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                            show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)
    model.save(out)
    size = sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())
    return {"build_s": time.perf_counter() - start, "disk_mb": size / 2**20}


def _bm25s_search(model, stemmer, query: str, k: int) -> None:
    import bm25s

    tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False,
                            return_ids=False)
    model.retrieve(tokens, k=k, show_progress=False)


def bm25s_cold(index: str, query: str) -> dict:
    start = time.perf_counter()
    import bm25s
    import Stemmer

    model = bm25s.BM25.load(index, mmap=True)
    _bm25s_search(model, Stemmer.Stemmer("english"), query, 10)
    return {"open_first_search_s": time.perf_counter() - start}


def bm25s_warm(index: str, queries: list[str]) -> dict:
    import bm25s
    import Stemmer

    model, stemmer = bm25s.BM25.load(index, mmap=True), Stemmer.Stemmer("english")
    _bm25s_search(model, stemmer, queries[0], 10)
    times = []
    for query in queries:
        start = time.perf_counter()
        try:
            _bm25s_search(model, stemmer, query, 10)
        except ValueError:  # a query with no known token: bm25s refuses it
            pass
        times.append(time.perf_counter() - start)
    return _percentiles(times)


def _percentiles(times: list[float]) -> dict:
    return {"p50_ms": float(np.percentile(times, 50) * 1000),
            "p95_ms": float(np.percentile(times, 95) * 1000)}
