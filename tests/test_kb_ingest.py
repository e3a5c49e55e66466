"""Ingest: incremental by content hash, one transaction per document, vectors cached by text."""

from __future__ import annotations

import sqlite3

import pytest
from kb_fixtures import HashingEmbedder, make_corpus

from agentmodes.errors import KnowledgeBaseError
from agentmodes.knowledge.base import KnowledgeBase


@pytest.fixture
def corpus(tmp_path):
    return make_corpus(tmp_path / "docs")


def _open(tmp_path, embedder=None, **kwargs):
    return KnowledgeBase.open(tmp_path / "kb.db", embedder=embedder or HashingEmbedder(), **kwargs)


def test_folder_ingest_adds_every_format_and_embeds_each_chunk(tmp_path, corpus):
    embedder = HashingEmbedder()
    with _open(tmp_path, embedder) as kb:
        report = kb.ingest(corpus)
        names = sorted(p.rsplit("/", 1)[1] for p in report.added)
        assert names == ["agentur.md", "notes.txt", "plants.pdf", "volcano.html"]
        assert report.skipped == [] and report.removed == [] and report.updated == []
        stats = kb.stats()
        assert stats["documents"] == 4
        assert stats["chunks"] == report.chunks_added > 4
        assert report.embedded == len(embedder.passages) == stats["chunks"]
        assert report.pending_embeddings == 0 and stats["pending_embeddings"] == 0
        assert stats["embedder"] == "test:hashing-64" and stats["embedder_dim"] == 64
        assert kb.check() == []


def test_reingest_skips_unchanged_replaces_changed_deletes_removed(tmp_path, corpus):
    embedder = HashingEmbedder()
    with _open(tmp_path, embedder) as kb:
        kb.ingest(corpus)
        first_passages = len(embedder.passages)

        again = kb.ingest(corpus)
        assert len(again.unchanged) == 4 and not again.added and not again.updated
        assert again.embedded == 0 and len(embedder.passages) == first_passages

        notes = corpus / "notes.txt"
        notes.write_text("Ferries leave the harbour every hour.\n\n"
                         "Since May the last ferry departs at one in the morning.", encoding="utf-8")
        (corpus / "plants.pdf").unlink()
        (corpus / "new.md").write_text("# New\n\nA brand new page about glaciers.", encoding="utf-8")
        changed = kb.ingest(corpus)
        assert [p.rsplit("/", 1)[1] for p in changed.updated] == ["notes.txt"]
        assert [p.rsplit("/", 1)[1] for p in changed.removed] == ["plants.pdf"]
        assert [p.rsplit("/", 1)[1] for p in changed.added] == ["new.md"]
        assert len(changed.unchanged) == 2
        # Only text never seen before was embedded: the new notes paragraph chunk and new.md.
        new_passages = embedder.passages[first_passages:]
        assert changed.embedded == len(new_passages) == 2
        assert any("one in the morning" in p for p in new_passages)
        stats = kb.stats()
        assert stats["documents"] == 4 and stats["pending_embeddings"] == 0
        # vectors of the deleted PDF and of the replaced paragraph are gone, the rest stays
        assert stats["vectors"] == stats["chunks"]
        assert kb.check() == []


def test_same_text_in_a_copied_file_is_not_embedded_again(tmp_path, corpus):
    embedder = HashingEmbedder()
    with _open(tmp_path, embedder) as kb:
        kb.ingest(corpus / "agentur.md")
        before = len(embedder.passages)
        copy = tmp_path / "copy" / "agentur.md"
        copy.parent.mkdir()
        copy.write_bytes((corpus / "agentur.md").read_bytes())
        report = kb.ingest(copy)
        assert len(report.added) == 1 and report.embedded == 0
        assert len(embedder.passages) == before


def test_bad_files_are_skipped_with_reasons_and_the_rest_ingested(tmp_path, corpus):
    (corpus / "junk.txt").write_bytes(bytes(range(256)) * 40)
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Pages 2 0 R >>\nendobj\ntrailer")
    (corpus / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (corpus / "latin1.txt").write_bytes("Die Öffnungszeiten der Bücherei".encode("latin-1"))
    (corpus / ".hidden.md").write_text("# secret", encoding="utf-8")
    with _open(tmp_path) as kb:
        report = kb.ingest([corpus, tmp_path / "does-not-exist"])
        reasons = {s.path.rsplit("/", 1)[-1]: s.reason for s in report.skipped}
        assert set(reasons) == {"junk.txt", "broken.pdf", "photo.png", "does-not-exist"}
        assert "binary" in reasons["junk.txt"]
        assert "damaged PDF" in reasons["broken.pdf"]
        assert "unsupported file type '.png'" in reasons["photo.png"]
        assert reasons["does-not-exist"] == "no such file or directory"
        assert len(report.added) == 5  # the four good files plus the latin-1 one
        assert kb.stats()["documents"] == 5


def test_a_file_that_turns_corrupt_loses_its_stale_text(tmp_path, corpus):
    with _open(tmp_path) as kb:
        kb.ingest(corpus)
        (corpus / "plants.pdf").write_bytes(b"%PDF-1.4\ntruncated")
        report = kb.ingest(corpus)
        skipped = {s.path.rsplit("/", 1)[1]: s.reason for s in report.skipped}
        assert "previous version was removed" in skipped["plants.pdf"]
        assert kb.stats()["documents"] == 3


def test_missing_path_that_was_ingested_is_removed(tmp_path, corpus):
    with _open(tmp_path) as kb:
        kb.ingest(corpus / "notes.txt")
        (corpus / "notes.txt").unlink()
        report = kb.ingest(corpus / "notes.txt")
        assert [p.rsplit("/", 1)[1] for p in report.removed] == ["notes.txt"]
        assert report.skipped == [] and kb.stats()["documents"] == 0


def test_ingest_without_embedding_leaves_pending_then_embed_pending_finishes(tmp_path, corpus):
    embedder = HashingEmbedder()
    with _open(tmp_path, embedder) as kb:
        report = kb.ingest(corpus, embed=False)
        assert report.embedded == 0 and report.pending_embeddings == kb.stats()["chunks"]
        assert embedder.passages == []
        seen = []
        done = kb.embed_pending(progress=lambda phase, n, total, label: seen.append((phase, n, total)),
                                batch_size=2)
        assert done == report.pending_embeddings and kb.stats()["pending_embeddings"] == 0
        assert seen[0] == ("embed", 0, done) and seen[-1] == ("embed", done, done)
        assert len(seen) == 1 + -(-done // 2)  # one call per batch of two


def test_progress_reports_each_file(tmp_path, corpus):
    calls = []
    with _open(tmp_path) as kb:
        kb.ingest(corpus, progress=lambda phase, n, total, label: calls.append((phase, n, total, label)))
    reads = [c for c in calls if c[0] == "read"]
    assert reads[-1][1:3] == (4, 4)
    assert {c[3].rsplit("/", 1)[-1] for c in reads if c[3]} == \
        {"agentur.md", "notes.txt", "plants.pdf", "volcano.html"}


def test_other_embedder_is_refused_until_reindex(tmp_path, corpus):
    with _open(tmp_path, HashingEmbedder("test:hashing-64")) as kb:
        kb.ingest(corpus)
    with pytest.raises(KnowledgeBaseError, match="--reindex"):
        _open(tmp_path, HashingEmbedder("test:other", dim=32))
    other = HashingEmbedder("test:other", dim=32)
    with _open(tmp_path, other, reindex=True) as kb:
        assert kb.stats()["pending_embeddings"] == kb.stats()["chunks"]
        report = kb.ingest(corpus, force=True)
        assert len(report.updated) == 4 and report.pending_embeddings == 0
        assert kb.stats()["embedder"] == "test:other" and kb.stats()["embedder_dim"] == 32


def test_recorded_embedder_that_cannot_be_loaded_says_how_to_reindex(tmp_path, corpus):
    with _open(tmp_path) as kb:
        kb.ingest(corpus)
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:  # no embedder given: use the recorded one
        assert kb.embed_pending() == 0  # nothing pending: the recorded name suffices, no load
        with pytest.raises(KnowledgeBaseError, match="test:hashing-64.*--reindex"):
            _ = kb.embedder


def test_not_a_kb_files_are_refused_with_one_line(tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello")
    with pytest.raises(KnowledgeBaseError, match="not an agentmodes knowledge base") as err:
        KnowledgeBase.open(text_file)
    assert "\n" not in str(err.value)
    other_db = tmp_path / "other.db"
    with sqlite3.connect(other_db) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(KnowledgeBaseError, match="SQLite database but not an agentmodes"):
        KnowledgeBase.open(other_db)
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    with pytest.raises(KnowledgeBaseError, match="not an agentmodes knowledge base or is damaged"):
        KnowledgeBase.open(damaged)
    with pytest.raises(KnowledgeBaseError, match="is a directory"):
        KnowledgeBase.open(tmp_path)
    with pytest.raises(KnowledgeBaseError, match="no knowledge base at"):
        KnowledgeBase.open(tmp_path / "absent.db", create=False)


def test_kb_locked_by_another_writer_gives_clear_error(tmp_path, corpus):
    path = tmp_path / "kb.db"
    KnowledgeBase.open(path, embedder=HashingEmbedder()).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        with KnowledgeBase.open(path, embedder=HashingEmbedder(), busy_timeout=0.2) as kb:
            with pytest.raises(KnowledgeBaseError, match="locked by another writer"):
                kb.ingest(corpus)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with KnowledgeBase.open(path, embedder=HashingEmbedder()) as kb:  # released: works again
        assert len(kb.ingest(corpus).added) == 4


def test_embedder_crash_keeps_the_text_and_says_how_to_finish(tmp_path, corpus):
    class BrokenEmbedder(HashingEmbedder):
        def embed_passages(self, texts):
            raise RuntimeError("model file truncated")

    with _open(tmp_path, BrokenEmbedder()) as kb:
        with pytest.raises(KnowledgeBaseError, match="model file truncated.*run the ingest again"):
            kb.ingest(corpus)
        assert kb.stats()["documents"] == 4
        assert kb.search("volcano", mode="lexical")[0].title == "Volcano Guide"


def test_kb_remembers_its_chunking(tmp_path, corpus):
    with _open(tmp_path, chunk_size=200, chunk_overlap=40) as kb:
        kb.ingest(corpus)
    with _open(tmp_path) as kb:
        assert (kb.chunking.size, kb.chunking.overlap) == (200, 40)
        (corpus / "extra.md").write_text("# Extra\n\n" + "Words about rivers and lakes. " * 30)
        kb.ingest(corpus)
        extra = [len(h.text) for h in kb.search("rivers lakes", mode="lexical", k=20)
                 if h.title == "Extra"]
        assert len(extra) > 2 and max(extra) <= 201
        small = kb.stats()["chunks"]
    with _open(tmp_path, chunk_size=2000, chunk_overlap=100) as kb:
        kb.ingest(corpus, force=True)
        assert kb.stats()["chunks"] < small


def test_a_kb_inside_the_ingested_folder_is_not_a_document(tmp_path, corpus):
    with KnowledgeBase.open(corpus / "agentmodes.db", embedder=HashingEmbedder()) as kb:
        report = kb.ingest(corpus)
        assert report.skipped == [] and len(report.added) == 4
