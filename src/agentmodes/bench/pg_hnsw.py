"""`agentmodes bench pg-hnsw`: where pgvector's HNSW index starts to pay on a PostgreSQL KB.

A PostgreSQL KB scans every vector below AGENTMODES_PG_HNSW_MIN and uses an HNSW index from
there on (knowledge/backends/postgres_vectors.py). This measures that choice at several sizes:
for N vectors it fills tables of the KB's own shape (embeddings, chunks) with the first N
chunks of bench scale's corpus through the stand-in embedder, builds the KB's own index
(`index_sql`, CONCURRENTLY as an ingest does) and runs the KB's own nearest-vectors statement
(`knn_sql`, SEMANTIC_CANDIDATES rows, in a read-only snapshot set up as a search's) both ways,
interleaved query by query:

- p50/p95 wall time of the statement (client to server and back, on a unix socket), the
  HNSW one with the table scan disabled so that it measures the index; and whether the
  planner picks the index for the KB's statement by itself (it does not at small sizes);
- shared buffers touched per statement (EXPLAIN ANALYZE BUFFERS), a count that does not
  depend on the machine's load;
- recall@10 of the index against the exact scan (the KB ranks the candidates by their exact
  cosines, so the top 10 of the candidates is what a semantic search returns);
- the index build time and size (what the ingest that crosses the threshold pays once).

The default of AGENTMODES_PG_HNSW_MIN is taken from this table (`suggested_threshold`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .kb_backends import postgres_url
from .scale_corpus import CHUNKS_PER_FOLDER, StandInEmbedder, build_corpus, queries

DEFAULT_SIZES = (1_000, 5_000, 10_000, 20_000, 50_000, 100_000)
EXPLAINED = 10          # queries whose statements are also run under EXPLAIN (ANALYZE, BUFFERS)
TABLES = """
CREATE TABLE chunks (id bigserial PRIMARY KEY, text_hash text NOT NULL);
CREATE INDEX chunks_text_hash ON chunks (text_hash);
CREATE TABLE embeddings (embedder text NOT NULL, text_hash text NOT NULL,
                         vector vector NOT NULL, PRIMARY KEY (embedder, text_hash));
"""


def chunk_texts(folders: list[Path], count: int) -> list[str]:
    """The first `count` chunks of the corpus (one paragraph each, scale_corpus.py)."""
    texts: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.txt")):
            texts.extend(p.strip() for p in path.read_text(encoding="utf-8").split("\n\n")
                         if p.strip())
            if len(texts) >= count:
                return texts[:count]
    return texts


def _fill(conn, schema: str, texts: list[str], vectors: np.ndarray, space: str) -> None:
    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'SET search_path TO "{schema}", public')
    conn.execute(TABLES)
    hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
    with conn.cursor().copy("COPY chunks (text_hash) FROM STDIN") as copy:
        for h in hashes:
            copy.write_row((h,))
    with conn.cursor().copy("COPY embeddings (embedder, text_hash, vector) FROM STDIN "
                            "(FORMAT BINARY)") as copy:
        copy.set_types(["text", "text", "vector"])
        for h, v in dict(zip(hashes, vectors)).items():
            copy.write_row((space, h, v))
    conn.execute("ANALYZE chunks")
    conn.execute("ANALYZE embeddings")


def _buffers(plan: dict) -> int:
    return int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))


def _run(conn, sql: str, vector: np.ndarray, count: int, explain: bool,
         force_index: bool = False):
    """(seconds, [(id, cosine)], buffers or None) of one statement in a search's snapshot;
    `force_index`: the planner may not scan the table instead of using the index."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute("SET LOCAL enable_sort = off")          # as PostgresBackend.snapshot
        if force_index:
            conn.execute("SET LOCAL enable_seqscan = off")
        start = time.perf_counter()
        rows = conn.execute(sql, {"q": vector, "n": count}).fetchall()
        seconds = time.perf_counter() - start
        buffers = None
        if explain:
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql,
                                {"q": vector, "n": count}).fetchone()[0][0]["Plan"]
            buffers = _buffers(plan)
    return seconds, rows, buffers


def _top(rows: list, k: int = 10) -> set[int]:
    return {i for i, _ in sorted(rows, key=lambda r: -r[1])[:k]}


def measure_size(server: str, size: int, texts: list[str], vectors: np.ndarray,
                 query_vectors: np.ndarray, keep: bool = False) -> dict:
    import psycopg
    from pgvector.psycopg import register_vector

    from ..knowledge.backends.postgres_vectors import (BUILD_MEMORY, HNSW_EF_SEARCH,
                                                       index_name, index_sql, knn_sql,
                                                       literal)
    from ..knowledge.retriever import SEMANTIC_CANDIDATES

    space, dim, schema = StandInEmbedder.name, StandInEmbedder.dim, f"hnsw_bench_{size}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        _fill(conn, schema, texts[:size], vectors[:size], space)
        conn.execute(f"SET maintenance_work_mem = {literal(BUILD_MEMORY)}")
        start = time.perf_counter()
        conn.execute(index_sql(space, dim, concurrently=True))
        build_s = time.perf_counter() - start
        index_mb = conn.execute("SELECT pg_relation_size(%s::regclass)",
                                (f'"{schema}"."{index_name(space)}"',)
                                ).fetchone()[0] / 2**20
        table_mb = conn.execute("SELECT pg_total_relation_size('embeddings')").fetchone()[0] \
            / 2**20
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")   # as every KB connection
        statements = {"exact": knn_sql(space, dim, exact=True), "hnsw": knn_sql(space, dim)}
        # Which plan the KB's own statement gets from the planner (the KB does not force it)
        planned = json.dumps(conn.execute("EXPLAIN (FORMAT JSON) " + statements["hnsw"],
                                          {"q": query_vectors[0], "n": SEMANTIC_CANDIDATES}
                                          ).fetchone()[0])
        times: dict[str, list[float]] = {name: [] for name in statements}
        buffers: dict[str, list[int]] = {name: [] for name in statements}
        hits = total = 0
        for i, vector in enumerate(query_vectors):
            order = list(statements) if i % 2 == 0 else list(statements)[::-1]
            found = {}
            for name in order:
                seconds, rows, touched = _run(conn, statements[name], vector,
                                              SEMANTIC_CANDIDATES, i < EXPLAINED,
                                              force_index=name == "hnsw")
                times[name].append(seconds)
                found[name] = rows
                if touched is not None:
                    buffers[name].append(touched)
            exact_top = _top(found["exact"])
            hits += len(_top(found["hnsw"]) & exact_top)
            total += len(exact_top)
        if not keep:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    out = {"vectors": size, "build_s": build_s, "index_mb": index_mb, "table_mb": table_mb,
           "recall_at_10": hits / max(1, total), "queries": len(query_vectors),
           "planner_uses_index": index_name(space) in planned,
           "load_avg_1min": os.getloadavg()[0]}
    for name in statements:
        out[f"{name}_p50_ms"] = float(np.percentile(times[name], 50) * 1000)
        out[f"{name}_p95_ms"] = float(np.percentile(times[name], 95) * 1000)
        out[f"{name}_buffers"] = float(np.mean(buffers[name])) if buffers[name] else None
    return out


def suggested_threshold(rows: list[dict]) -> int | None:
    """The smallest measured size from which on, at every larger measured size, the index is
    faster at p50 than the exact scan AND the planner picks it for the KB's statement by
    itself (below that, building it costs the ingest and buys nothing); None: never.
    Recall is not part of the rule: it is what the index costs at every size above the
    threshold, whichever the threshold is (reported beside)."""
    chosen = None
    for row in sorted(rows, key=lambda r: -r["vectors"]):
        if row["hnsw_p50_ms"] < row["exact_p50_ms"] and row.get("planner_uses_index", True):
            chosen = row["vectors"]
        else:
            break
    return chosen


def run_pg_hnsw(sizes: list[int], work: Path, pg_url: str | None = None,
                n_queries: int = 100, data_dir: Path | None = None, out_dir: Path | None = None,
                keep: bool = False, progress=print) -> dict:
    from ..knowledge.backends.postgres_vectors import HNSW_MIN
    from .scale import _sample_texts                   # the queries bench scale asks

    work.mkdir(parents=True, exist_ok=True)
    corpus = build_corpus(work / "corpus-txt", max(sizes), data_dir, progress=progress)
    texts = chunk_texts(corpus[:-(-max(sizes) // CHUNKS_PER_FOLDER)], max(sizes))
    embedder = StandInEmbedder()
    progress(f"stand-in vectors of {len(texts)} chunks")
    vectors = embedder.embed_passages(texts)
    results: dict = {"sizes": [], "current_threshold": HNSW_MIN, "embedder": embedder.name}
    with postgres_url(pg_url) as server:
        for size in sorted(sizes):
            folders = corpus[:max(1, size // CHUNKS_PER_FOLDER)]
            query_vectors = np.vstack([embedder.embed_query(q) for q in
                                       queries(_sample_texts(folders), n_queries)])
            progress(f"{size} vectors: fill, build the HNSW index, {n_queries} queries x 2")
            results["sizes"].append(measure_size(server, size, texts, vectors, query_vectors,
                                                 keep))
            progress(f"{size}: {json.dumps(results['sizes'][-1])}")
    results["suggested_threshold"] = suggested_threshold(results["sizes"])
    results["measured"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if out_dir is not None:
        from .pg_hnsw_report import write_report
        write_report(results, Path(out_dir))
    return results
