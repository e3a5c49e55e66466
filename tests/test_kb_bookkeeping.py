"""The SQLite KB's embedding bookkeeping: what is pending, and which vectors a delete prunes.

Both used to be sweeps of every chunk or vector; they now follow a watermark and the deleted
document's own texts (knowledge/backends/sqlite_vectors.py). These tests pin down that the
cheaper bookkeeping never hides a chunk that still needs a vector and never drops a vector
that some chunk still uses.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from kb_fixtures import HashingEmbedder

from agentmodes.errors import KnowledgeBaseError
from agentmodes.knowledge.base import KnowledgeBase


def _write(folder: Path, name: str, *paragraphs: str) -> Path:
    """A text file; files of the same name have the same title, so the same paragraph in
    two of them is the same indexed text (one vector)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return path


def _vector_hashes(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT text_hash FROM embeddings")}


def _chunk_hashes(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT text_hash FROM chunks")}


class FailingAfter(HashingEmbedder):
    """Embeds `good` batches, then fails (a model crash half way through)."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    def embed_passages(self, texts):
        if self.good <= 0:
            raise RuntimeError("model crashed")
        self.good -= 1
        return super().embed_passages(texts)


def test_an_interrupted_embedding_leaves_exactly_the_rest_pending(tmp_path):
    docs = tmp_path / "docs"
    for i in range(12):  # one chunk each
        _write(docs, f"d{i:02}.txt", f"Paragraph about item qq{i}a with words.")
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=FailingAfter(good=2)) as kb:
        kb.ingest(docs, embed=False)
        total = kb.stats()["pending_embeddings"]
        with pytest.raises(KnowledgeBaseError, match="model crashed"):
            kb.embed_pending(batch_size=3)
        assert kb.stats()["pending_embeddings"] == total - 6
    embedder = HashingEmbedder()
    with KnowledgeBase.open(db, embedder=embedder) as kb:
        assert kb.embed_pending(batch_size=3) == total - 6  # exactly the rest, nothing twice
        assert kb.stats()["pending_embeddings"] == 0
        _write(docs, "late.txt", "A late paragraph about qqlate.")
        report = kb.ingest(docs)
        assert report.embedded == 1 and embedder.passages[-1].endswith("qqlate.")
        assert kb.search("qqlate", mode="semantic", k=1)[0].title == "late"


def test_text_already_embedded_elsewhere_is_not_pending(tmp_path):
    docs = tmp_path / "docs"
    shared = "The shared paragraph about the zephyr valve appears in two files."
    _write(docs / "a", "same.txt", shared)
    db = tmp_path / "kb.db"
    embedder = HashingEmbedder()
    with KnowledgeBase.open(db, embedder=embedder) as kb:
        kb.ingest(docs)
        _write(docs / "b", "same.txt", shared)
        report = kb.ingest(docs)
        assert report.added and report.embedded == 0 and report.pending_embeddings == 0
        assert len(embedder.passages) == 1


def test_reindexing_makes_every_chunk_pending_for_the_new_embedder(tmp_path):
    docs = tmp_path / "docs"
    _write(docs, "a.txt", "First paragraph about qqa.")
    _write(docs, "b.txt", "Second paragraph about qqb.")
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
    other = HashingEmbedder("test:other", dim=32)
    with KnowledgeBase.open(db, embedder=other, reindex=True) as kb:
        chunks = kb.stats()["chunks"]
        assert kb.stats()["pending_embeddings"] == chunks
        assert kb.embed_pending() == chunks
        assert kb.stats()["pending_embeddings"] == 0


def _hashes_of(db: Path, path: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT c.text_hash FROM chunks c JOIN documents d "
                                           "ON d.id = c.doc_id WHERE d.path = ?", (str(path),))}


def test_removing_or_changing_a_document_prunes_only_vectors_no_chunk_uses(tmp_path):
    docs = tmp_path / "docs"
    shared = "The shared paragraph about the zephyr valve appears in two files. " * 20
    a = _write(docs / "a", "same.txt", shared, "Only file a talks about the quokka gearbox.")
    b = _write(docs / "b", "same.txt", shared, "Only file b talks about the narwhal pump.")
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
        common = _hashes_of(db, a) & _hashes_of(db, b)
        only_a = _hashes_of(db, a) - common
        assert common and only_a and _vector_hashes(db) == _chunk_hashes(db)
        a.unlink()
        kb.ingest(docs)
        # the text only file a had is gone with its vector; the shared text keeps its vector
        assert _vector_hashes(db) == _chunk_hashes(db) and common <= _vector_hashes(db)
        assert not only_a & _vector_hashes(db)
        _write(docs / "b", "same.txt", shared, "File b now talks about the axolotl filter.")
        assert kb.ingest(docs).updated
        assert _vector_hashes(db) == _chunk_hashes(db) and common <= _vector_hashes(db)
        assert kb.remove_document(kb.documents()[0].id)
        assert _vector_hashes(db) == set()
        assert kb.search("zephyr valve", mode="lexical", k=3) == []


def test_pending_count_looks_only_above_the_watermark(tmp_path):
    """The watermark is a chunk id below which every chunk has a vector: after a full embed
    it is the last chunk, so counting what is pending no longer reads old chunks."""
    docs = tmp_path / "docs"
    for i in range(4):
        _write(docs, f"d{i}.txt", f"Paragraph about qq{i}.")
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
    with sqlite3.connect(db) as conn:
        mark = conn.execute("SELECT value FROM meta WHERE key = "
                            "'embedded_through:test:hashing-64'").fetchone()
        assert mark is not None and int(mark[0]) == conn.execute(
            "SELECT MAX(id) FROM chunks").fetchone()[0]
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.stats()["pending_embeddings"] == 0
        assert np.isfinite(kb.search("qq1", mode="hybrid", k=1)[0].score)
