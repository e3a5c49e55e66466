"""`agentmodes bench retrieval`: our lexical, semantic and hybrid search against peers.

For each BEIR set it runs, in one process and one pass: ours (lexical, semantic, hybrid),
bm25s with the same English stemming, rank-bm25, plain numpy dense search over the same
embeddings and plain RRF; then the fusion ablation, the confidence calibration figures and
`agentmodes bench scale`
measures the knowledge base at 1k-1M chunks. Quality: nDCG@10, Recall@5/@10, MRR@10. Cost: index build time,
single-query latency p50/p95 (query vectors precomputed; embedding a query is reported
separately), peak memory = tracemalloc peak while building the index (Python and numpy
allocations; not RSS).
"""

from __future__ import annotations

import os
import time
import tracemalloc
from contextlib import ExitStack
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from ..knowledge.analysis import Analyzer
from ..knowledge.confidence import load_model
from ..knowledge.embedders import Embedder
from ..knowledge.searcher import Searcher
from . import calibration
from .ablation import AblationSet, run_ablation
from .beir import BeirSet, load_dataset
from .embed_cache import DEFAULT_CACHE_DIR, cached_embeddings
from .kb_backends import backend_systems, postgres_url
from .metrics import evaluate
from .peers import (CachedQueryEmbedder, System, bm25s_system, numpy_dense_system,
                    our_systems, plain_rrf_system, rank_bm25_system)


def shrink(ds: BeirSet, limit: int | None) -> BeirSet:
    """First `limit` queries, and a corpus of their relevant docs plus 20 x limit others."""
    if not limit:
        return ds
    small = ds.limited(limit)
    wanted = {doc for rel in small.qrels.values() for doc in rel}
    keep = [i for i, d in enumerate(ds.doc_ids) if d in wanted]
    keep += [i for i, d in enumerate(ds.doc_ids) if d not in wanted][:20 * limit]
    keep.sort()
    return BeirSet(ds.name, [ds.doc_ids[i] for i in keep], [ds.titles[i] for i in keep],
                   [ds.texts[i] for i in keep], small.query_ids, small.queries, small.qrels,
                   ds.zero_graded)


def measure_all(systems: list[System], ds: BeirSet, progress=print) -> list[dict]:
    """Build each system (timed, then again under tracemalloc), then time the queries
    interleaved: query i runs on every system before query i+1, so drifts in the load of
    this shared machine hit all systems alike instead of whichever ran last."""
    builds = {}
    for system in systems:
        progress(f"{ds.name}: building {system.name}")
        start = time.perf_counter()
        system.build()
        build_s = time.perf_counter() - start
        tracemalloc.start()
        system.build()  # second build under tracemalloc: tracing slows Python code down
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        builds[system.name] = (build_s, peak)
    runs = {system.name: {} for system in systems}
    times: dict[str, list[float]] = {system.name: [] for system in systems}
    progress(f"{ds.name}: {len(ds.query_ids)} queries x {len(systems)} systems, interleaved")
    for qi, qid in enumerate(ds.query_ids):
        for system in systems[qi % len(systems):] + systems[:qi % len(systems)]:
            t = time.perf_counter()
            ranked = system.query(qi)
            times[system.name].append(time.perf_counter() - t)
            runs[system.name][qid] = [ds.doc_ids[i] for i in ranked]
    return [{"system": system.name, **evaluate(runs[system.name], ds.qrels),
             "build_s": builds[system.name][0],
             "p50_ms": float(np.percentile(times[system.name], 50) * 1000),
             "p95_ms": float(np.percentile(times[system.name], 95) * 1000),
             "peak_mb": builds[system.name][1] / 2**20} for system in systems]


def query_embedding_ms(embedder: Embedder, queries: list[str], n: int = 20) -> float | None:
    if isinstance(embedder, CachedQueryEmbedder):
        return None
    times = []
    for q in queries[:n]:
        t = time.perf_counter()
        embedder.embed_query(q)
        times.append(time.perf_counter() - t)
    return float(np.percentile(times, 50) * 1000) if times else None


def run_dataset(ds: BeirSet, embedder: Embedder, cache_dir: Path, table: calibration.HitTable,
                progress=print, backends: dict[str, str] | None = None,
                stack: ExitStack | None = None) -> tuple[dict, AblationSet]:
    passages = ds.passages()
    progress(f"{ds.name}: {len(passages)} passages, {len(ds.queries)} queries; embedding "
             f"(cached under {cache_dir})")
    vectors = cached_embeddings(embedder, passages, "passage", cache_dir)
    query_vectors = cached_embeddings(embedder, ds.queries, "query", cache_dir)
    cached = CachedQueryEmbedder(embedder.name, ds.queries, query_vectors)
    analyzer = Analyzer("en")
    systems = our_systems(passages, ds.queries, vectors, cached)
    systems += [bm25s_system(passages, ds.queries),
                rank_bm25_system(passages, ds.queries, analyzer.terms),
                numpy_dense_system(vectors, query_vectors),
                plain_rrf_system(passages, ds.queries, vectors, cached)]
    for name, where in (backends or {}).items():
        systems += backend_systems(name, where, passages, ds.queries, vectors, cached, stack)
    rows = measure_all(systems, ds, progress)
    searcher = Searcher(list(range(len(passages))), passages, vectors, embedder=cached)
    calibration.collect(table, ds.name, searcher, ds.queries, calibration.relevant_rows(ds),
                        ("lexical", "semantic", "hybrid"))
    ablation_set = AblationSet(searcher, ds.queries, ds.doc_ids,
                               [ds.qrels[q] for q in ds.query_ids],
                               np.vstack([searcher.lexical.scores(q)[1] for q in ds.queries]),
                               query_vectors @ vectors.T)
    result = {"dataset": ds.name, "passages": len(passages), "queries": len(ds.queries),
              "embedder": embedder.name,
              "query_embedding_p50_ms": query_embedding_ms(embedder, ds.queries),
              "load_avg_1min": os.getloadavg()[0],
              "systems": rows}
    return result, ablation_set


def run_retrieval(datasets: list[str], embedder: Embedder, out_dir: Path | None,
                  limit: int | None = None, data_dir: Path | None = None,
                  cache_dir: Path = DEFAULT_CACHE_DIR,
                  fit_confidence: bool = False, progress=print,
                  backends: list[str] = (), kb_url: str | None = None) -> dict:
    """`backends` (sqlite, postgresql): also search each set through a real KB on each of
    them (kb_backends.py); `kb_url`: the PostgreSQL database for that (default: a
    throw-away server)."""
    table = calibration.HitTable()
    per_set, score_sets = [], {}
    with ExitStack() as stack:
        where = {}
        if "sqlite" in backends:
            where["sqlite"] = stack.enter_context(TemporaryDirectory(prefix="agentmodes-kb-"))
        if "postgresql" in backends:
            where["postgresql"] = stack.enter_context(postgres_url(kb_url))
        for name in datasets:
            ds = shrink(load_dataset(name, data_dir), limit)
            with ExitStack() as kbs:
                result, scores = run_dataset(ds, embedder, Path(cache_dir), table, progress,
                                             where, kbs)
            per_set.append(result)
            score_sets[name] = scores
    progress("fusion ablation")
    ablation = run_ablation(score_sets)
    if fit_confidence:
        progress("fitting confidence")
        model, figures = calibration.fit(table)
        calibration.save(model, figures)
    else:
        model = load_model()
        figures = calibration.report(table, model)
    results = {"datasets": per_set, "ablation": ablation,
               "confidence": {"high_confidence": model["high_confidence"],
                              "refitted": fit_confidence, "figures": figures},
               "limit": limit, "backends": list(backends),
               "memory_note": "peak_mb = tracemalloc peak during index build (not RSS)",
               "latency_note": "single query, query vector precomputed; see "
                               "query_embedding_p50_ms for the embedder's own cost"}
    if out_dir is not None:
        from .retrieval_report import write_reports
        write_reports(results, Path(out_dir))
    return results
