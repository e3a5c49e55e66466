"""`agentmodes bench index-candidates`: the index designs issue 8 asked to compare, side by side.

On one KB built by `bench scale` (same chunk text, same stand-in vectors, same queries):

- lexical: our saved segments, SQLite FTS5 over our analysed terms (bm25()), bm25s saved and
  memory-mapped, Tantivy over our analysed terms. Figures: build, open, query p50, and what
  each can give hybrid search (a score for every chunk: the z-scores of fusion.py and the
  confidence model are fitted on those; incremental add/remove).
- dense: an exact float32 matrix (ours below ann.ANN_MIN vectors), exact int8 (usearch), sqlite-
  vec's vec0 table, and HNSW graphs from usearch (ours above ANN_MIN) and hnswlib. Figures:
  build, open, query p50, recall@10 against exact float32.

The candidates that are not project dependencies (tantivy, sqlite-vec, hnswlib) come from
`pip install -e ".[candidates]"`; a missing one is reported as such.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np

from .results import write_results
from .scale_corpus import StandInEmbedder, queries
from .scale_peers import _texts


def _p50(fn, items) -> float:
    fn(items[0])
    times = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def lexical_candidates(kb: Path, work: Path, query_list: list[str]) -> list[dict]:
    from ..knowledge.analysis import Analyzer
    from . import scale_peers
    from .scale_probe import _open

    rows = []
    base, open_s = _timed(lambda: _open(str(kb)))
    base.search(query_list[0], mode="lexical")
    rows.append({"system": "ours: saved segments", "open_s": open_s,
                 "p50_ms": _p50(lambda q: base.search(q, mode="lexical", k=10), query_list),
                 "all_scores": True, "incremental": True})
    base.close()
    fts = work / "candidates.fts5.db"
    built = scale_peers.fts5_build(str(kb), str(fts))
    conn, open_s = _timed(lambda: sqlite3.connect(fts))
    analyzer = Analyzer()
    rows.append({"system": "SQLite FTS5 bm25() over our terms", "build_s": built["build_s"],
                 "open_s": open_s, "p50_ms": _p50(
                     lambda q: scale_peers.fts5_search(conn, analyzer, q, 10), query_list),
                 "all_scores": False, "incremental": True})
    conn.close()
    bm = work / "candidates.bm25s"
    built = scale_peers.bm25s_build(str(kb), str(bm))
    warm = scale_peers.bm25s_warm(str(bm), query_list)
    rows.append({"system": "bm25s saved, mmap=True", "build_s": built["build_s"],
                 "open_s": scale_peers.bm25s_cold(str(bm), query_list[0])["open_first_search_s"],
                 "p50_ms": warm["p50_ms"], "all_scores": True, "incremental": False})
    rows.append(_tantivy(kb, work, query_list))
    return rows


def _tantivy(kb: Path, work: Path, query_list: list[str]) -> dict:
    row = {"system": "Tantivy over our terms", "all_scores": False, "incremental": True}
    try:
        import tantivy
    except ImportError:
        return {**row, "note": "tantivy not installed"}
    from ..knowledge.analysis import Analyzer

    folder = work / "candidates.tantivy"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    analyzer = Analyzer()
    texts = _texts(str(kb))
    schema = tantivy.SchemaBuilder().add_text_field("terms", index_option="freq").build()
    start = time.perf_counter()
    index = tantivy.Index(schema, path=str(folder))
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for text in texts:
        writer.add_document(tantivy.Document(terms=" ".join(analyzer.terms(text))))
    writer.commit()
    writer.wait_merging_threads()
    row["build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    opened = tantivy.Index.open(str(folder))
    searcher = opened.searcher()
    row["open_s"] = time.perf_counter() - start

    def search(q: str) -> None:
        terms = [t for t in dict.fromkeys(analyzer.terms(q))]
        if terms:
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "terms", t))
                 for t in terms])
            searcher.search(query, 10)

    row["p50_ms"] = _p50(search, query_list)
    return row


def dense_candidates(kb: Path, work: Path, query_list: list[str]) -> list[dict]:
    from ..knowledge.ann import ApproximateIndex
    from ..knowledge.backends.index_files import read_manifest
    from ..knowledge.dense import dot_rows
    from ..knowledge.lexical import top_k

    folder = Path(f"{kb}.index")
    manifest = read_manifest(folder)
    n, dim = manifest["base_rows"], manifest["dim"]
    matrix = np.fromfile(folder / manifest["files"]["vectors"], dtype=np.float32,
                         count=n * dim).reshape(n, dim)
    embedder = StandInEmbedder()
    qv = [embedder.embed_query(q) for q in query_list]
    truth = [set(top_k(dot_rows(matrix, q), 10).tolist()) for q in qv]

    def recall(found: list) -> float:
        return float(np.mean([len(truth[i] & set(int(x) for x in f)) / 10
                              for i, f in enumerate(found)]))

    rows = [{"system": "exact float32 matrix (ours < ANN_MIN)", "memory_mb": matrix.nbytes / 2**20,
             "p50_ms": _p50(lambda q: top_k(dot_rows(matrix, q), 10), qv), "recall@10": 1.0}]
    from usearch.index import MetricKind, search as exact_search

    scale = 127 / np.abs(matrix).max()
    int8 = np.clip(np.round(matrix * scale), -127, 127).astype(np.int8)

    def int8_search(q):
        return exact_search(int8, np.clip(np.round(q * scale), -127, 127).astype(np.int8), 10,
                            MetricKind.IP, exact=True, threads=1).keys

    rows.append({"system": "exact int8 (usearch exact=True)", "memory_mb": int8.nbytes / 2**20,
                 "p50_ms": _p50(int8_search, qv), "recall@10": recall([int8_search(q) for q in qv])})
    rows.append(_sqlite_vec(matrix, work, qv, recall))
    ann, build_s = _timed(lambda: _usearch_build(matrix))
    path = work / "candidates.usearch"
    ann.save(path)
    view, open_s = _timed(lambda: ApproximateIndex.open(path))
    rows.append({"system": "usearch HNSW f16, view=True (ours >= ANN_MIN)", "build_s": build_s,
                 "open_s": open_s, "disk_mb": path.stat().st_size / 2**20,
                 "p50_ms": _p50(lambda q: view.search(q, 64), qv),
                 "recall@10": recall([_rescore(matrix, view.search(q, 64), q) for q in qv])})
    rows.append(_hnswlib(matrix, work, qv, recall))
    return rows


def _rescore(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray) -> list[int]:
    scores = matrix[rows] @ q
    return rows[np.argsort(-scores)[:10]].tolist()


def _usearch_build(matrix: np.ndarray):
    from ..knowledge.ann import ApproximateIndex

    ann = ApproximateIndex.create(matrix.shape[1])
    ann.add(np.arange(len(matrix)), matrix, threads=os.cpu_count() or 1)
    return ann


def _sqlite_vec(matrix: np.ndarray, work: Path, qv, recall) -> dict:
    row = {"system": "sqlite-vec vec0 (exact scan)"}
    try:
        import sqlite_vec
    except ImportError:
        return {**row, "note": "sqlite-vec not installed"}
    path = work / "candidates.vec.db"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    if not hasattr(conn, "enable_load_extension"):
        return {**row, "note": "this Python's sqlite3 cannot load extensions"}
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    start = time.perf_counter()
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{matrix.shape[1]}])")
    with conn:
        conn.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                         ((i + 1, matrix[i].tobytes()) for i in range(len(matrix))))
    row["build_s"] = time.perf_counter() - start

    def search(q):
        return [r[0] - 1 for r in conn.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = 10 ORDER BY distance",
            (np.asarray(q, np.float32).tobytes(),))]

    row.update(p50_ms=_p50(search, qv), disk_mb=path.stat().st_size / 2**20)
    row["recall@10"] = recall([search(q) for q in qv])  # L2 on unit vectors = cosine order
    return row


def _hnswlib(matrix: np.ndarray, work: Path, qv, recall) -> dict:
    row = {"system": "hnswlib HNSW float32"}
    try:
        import hnswlib
    except ImportError:
        return {**row, "note": "hnswlib not installed"}
    start = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=matrix.shape[1])
    index.init_index(max_elements=len(matrix), M=16, ef_construction=128)
    index.set_num_threads(os.cpu_count() or 1)
    index.add_items(matrix, np.arange(len(matrix)))
    row["build_s"] = time.perf_counter() - start
    path = work / "candidates.hnswlib"
    index.save_index(str(path))
    loaded = hnswlib.Index(space="ip", dim=matrix.shape[1])
    _, row["open_s"] = _timed(lambda: loaded.load_index(str(path)))
    loaded.set_ef(256)
    loaded.set_num_threads(1)
    row.update(disk_mb=path.stat().st_size / 2**20,
               p50_ms=_p50(lambda q: loaded.knn_query(q, 64), qv),
               **{"recall@10": recall([_rescore(matrix, loaded.knn_query(q, 64)[0][0]
                                                .astype(np.int64), q) for q in qv])})
    return row


def run_candidates(size: int, work: Path, out_dir: Path | None, n_queries: int = 100,
                   progress=print) -> dict:
    kb = work / f"kb-{size}.db"
    if not kb.exists():
        raise FileNotFoundError(f"{kb} is missing: run `agentmodes bench scale --sizes {size} "
                                f"--work {work}` first")
    sample = [t for t, in sqlite3.connect(f"file:{kb}?mode=ro", uri=True).execute(
        "SELECT text FROM chunks ORDER BY random() LIMIT 200")]
    query_list = queries(sample, n_queries)
    progress(f"{size}: lexical candidates")
    lexical = lexical_candidates(kb, work, query_list)
    progress(f"{size}: dense candidates")
    dense = dense_candidates(kb, work, query_list)
    results = {"chunks": size, "lexical": lexical, "dense": dense,
               "load_avg_1min": os.getloadavg()[0],
               "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if out_dir is not None:
        write_results(Path(out_dir), "index_candidates", results, markdown(results))
    return results


def markdown(results: dict) -> str:
    def table(rows: list[dict], columns: list[str]) -> str:
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in rows:
            cells = []
            for c in columns:
                v = row.get(c)
                cells.append("-" if v is None else f"{v:.3f}" if isinstance(v, float) else
                             ("yes" if v else "no") if isinstance(v, bool) else str(v))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    return (f"# Index candidates\n\nMeasured {results['measured']} by `agentmodes bench "
            f"index-candidates` on {results['chunks']} chunks of the scale corpus (stand-in "
            f"vectors), load average {results['load_avg_1min']:.1f} on 2 cores.\n\n"
            "## lexical\n\n" + table(results["lexical"], [
                "system", "build_s", "open_s", "p50_ms", "all_scores", "incremental", "note"])
            + "\n\n## dense\n\n" + table(results["dense"], [
                "system", "build_s", "open_s", "p50_ms", "recall@10", "memory_mb", "disk_mb",
                "note"]) + "\n\nall_scores: the index gives a score for every chunk (what "
            "z-score fusion and the confidence features need); incremental: documents are "
            "added and removed without a rebuild.\n")
