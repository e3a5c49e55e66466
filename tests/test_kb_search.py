"""KnowledgeBase.search: hits carry their document's context; the index follows the file."""

from __future__ import annotations

import pytest
from kb_fixtures import HashingEmbedder, make_corpus

from agentmodes.errors import AgentModesError, ConfigError, KnowledgeBaseError
from agentmodes.knowledge.base import KnowledgeBase


@pytest.fixture
def kb(tmp_path):
    corpus = make_corpus(tmp_path / "docs")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as base:
        base.ingest(corpus)
        yield base


def test_hit_carries_title_heading_path_source_and_position(kb, tmp_path):
    hit = kb.search("Öffnungszeiten", mode="lexical", k=1)[0]
    assert hit.title == "Handbuch der DG Agentur"
    assert hit.heading_path == ["DG Agentur", "Öffnungszeiten"]
    assert hit.source == str(tmp_path / "docs" / "agentur.md")
    assert "Öffnungszeit ist montags" in hit.text
    assert hit.position == 1 and hit.doc_id > 0 and hit.chunk_id > 0
    assert 0.0 <= hit.confidence <= 1.0


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_every_mode_finds_the_pdf_passage(kb, mode):
    hits = kb.search("chlorophyll absorbs light photosynthesis", mode=mode, k=3)
    assert hits and hits[0].title == "Plant Biology" and hits[0].heading_path == ["Page 1"]
    assert all(0.0 <= h.confidence <= 1.0 for h in hits)
    assert len(hits) <= 3


def test_bad_queries_are_one_line_errors(kb):
    for query in ("", "   \n "):
        with pytest.raises(AgentModesError, match="empty query"):
            kb.search(query)
    with pytest.raises(ConfigError, match="unknown search mode"):
        kb.search("ferry", mode="fuzzy")
    with pytest.raises(ConfigError, match="positive"):
        kb.search("ferry", k=0)


def test_text_is_searchable_before_embedding_and_hybrid_uses_what_exists(tmp_path):
    corpus = make_corpus(tmp_path / "docs")
    embedder = HashingEmbedder()
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=embedder) as kb:
        kb.ingest(corpus, embed=False)
        assert kb.search("last ferry midnight", mode="lexical")[0].title == "notes"
        assert kb.search("last ferry midnight", mode="hybrid")[0].title == "notes"
        with pytest.raises(KnowledgeBaseError, match="embedded"):
            kb.search("ferry", mode="semantic")
        kb.embed_pending()
        assert kb.search("last ferry midnight", mode="semantic")[0].title == "notes"


def test_open_kb_sees_documents_added_and_removed_later(tmp_path):
    corpus = make_corpus(tmp_path / "docs")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as reader:
        assert reader.search("glacier", mode="lexical") == []  # empty KB: no hits, no error
        with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as writer:
            writer.ingest(corpus)
            assert reader.search("volcano", mode="lexical")[0].title == "Volcano Guide"
            (corpus / "glacier.md").write_text("# Glaciers\n\nGlaciers carve valleys slowly.")
            (corpus / "volcano.html").unlink()
            writer.ingest(corpus)
        assert reader.search("glaciers carve valleys", mode="lexical")[0].title == "Glaciers"
        assert all(h.title != "Volcano Guide" for h in reader.search("volcano", mode="hybrid"))


def test_german_inflection_is_found(tmp_path):
    folder = tmp_path / "de"
    folder.mkdir()
    (folder / "zeiten.md").write_text("# Service\n\nUnsere Öffnungszeit: täglich 9 bis 17 Uhr.")
    (folder / "anfahrt.md").write_text("# Anfahrt\n\nDer Bus hält direkt vor dem Gebäude.")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        assert kb.search("Öffnungszeiten", mode="lexical", k=1)[0].source.endswith("zeiten.md")


def test_index_follows_changes_incrementally(tmp_path, monkeypatch):
    from agentmodes.knowledge.analysis import Analyzer

    corpus = make_corpus(tmp_path / "docs")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as kb:
        kb.ingest(corpus)
        assert kb.search("volcano", mode="hybrid")
        analysed: list[str] = []
        original = Analyzer.analyse_keys
        monkeypatch.setattr(Analyzer, "analyse_keys", lambda self, text, *args, **kwargs: (
            analysed.append(text), original(self, text, *args, **kwargs))[1])
        (corpus / "glacier.md").write_text("# Glaciers\n\nGlaciers carve valleys slowly.")
        report = kb.ingest(corpus)
        hits = kb.search("glaciers carve valleys", mode="semantic", k=1)
        assert hits[0].title == "Glaciers" and report.chunks_added == 1
        # nothing was re-analysed: the new chunk was analysed once, by the extraction
        # worker that chunked it (prepare.py), and this process analysed only the query
        assert analysed == ["glaciers carve valleys"]
        assert kb.search("glaciers carve valleys", mode="lexical", k=1)[0].title == "Glaciers"


def test_searches_from_other_threads_during_an_ingest(tmp_path):
    import threading

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        (folder / f"doc{i:02}.md").write_text(f"# Harbour {i}\n\nFerry number {i} leaves pier {i}.")
    errors: list[BaseException] = []
    seen_counts: list[int] = []
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as kb:
        done = threading.Event()

        def search_loop() -> None:
            try:
                while not done.is_set():
                    seen_counts.append(len(kb.search("ferry pier", mode="hybrid", k=100)))
            except BaseException as err:  # noqa: BLE001 - reported by the assertion below
                errors.append(err)

        readers = [threading.Thread(target=search_loop) for _ in range(2)]
        for thread in readers:
            thread.start()
        kb.ingest(folder)
        done.set()
        for thread in readers:
            thread.join()
        assert errors == []
        assert seen_counts and max(seen_counts) <= 40
        assert len(kb.search("ferry pier", mode="hybrid", k=100)) == 40
