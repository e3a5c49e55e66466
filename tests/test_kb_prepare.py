"""Chunks analysed by the extraction workers index exactly as the KB's own analyser would."""

from __future__ import annotations

import shutil

import pytest
from kb_fixtures import HashingEmbedder, make_corpus

from agentmodes.knowledge.analysis import Analyzer
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.knowledge.prepare import analyzer_signature

QUERIES = ["volcano eruption", "Öffnungszeiten der Agentur", "plants need light",
           "glacier", "the"]


def _lexical(kb: KnowledgeBase) -> list[list[tuple[str, float]]]:
    return [[(h.chunk_id, round(h.score, 6)) for h in kb.search(q, mode="lexical", k=10)]
            for q in QUERIES]


@pytest.mark.parametrize("language", ["auto", "de", "en"])
def test_worker_analysis_ranks_like_analysing_in_the_kb(tmp_path, monkeypatch, language):
    corpus = make_corpus(tmp_path / "docs")
    db = tmp_path / "kb.db"
    here: list[str] = []
    original = Analyzer.analyse_keys
    monkeypatch.setattr(Analyzer, "analyse_keys", lambda self, text, *args, **kwargs: (
        here.append(text), original(self, text, *args, **kwargs))[1])
    with KnowledgeBase.open(db, embedder=HashingEmbedder(), language=language) as kb:
        report = kb.ingest(corpus)
        assert report.chunks_added > 5
        assert here == []  # the workers analysed every chunk, with this KB's settings
        from_workers = _lexical(kb)
    shutil.rmtree(f"{db}.index")  # the next open analyses every chunk itself
    with KnowledgeBase.open(db, embedder=HashingEmbedder(), language=language) as kb:
        assert _lexical(kb) == from_workers
    assert any(from_workers)


def test_keys_from_other_analyser_settings_are_not_used(tmp_path):
    from agentmodes.knowledge.backends.sqlite import SQLiteBackend

    store = SQLiteBackend(tmp_path / "kb.db")
    english, german = analyzer_signature(Analyzer("en")), analyzer_signature(Analyzer("de"))
    store._analysed.update({1: (english, ("en", b"")), 2: (german, ("de", b"")),
                            3: (english, ("en", b""))})
    assert store.take_analysis([2, 3], english) == [None, ("en", b"")]
    assert store._analysed == {}  # chunk 1 was deleted before the index read it: dropped
    store.close()
