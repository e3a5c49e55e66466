"""The storage seam: KnowledgeBase.open picks the backend by location."""

from __future__ import annotations

import pytest
from kb_fixtures import HashingEmbedder

from agentmodes.errors import KnowledgeBaseError
from agentmodes.knowledge.backends import Backend, SearchIndex, open_backend, scheme_of
from agentmodes.knowledge.base import KnowledgeBase


def test_paths_are_sqlite_and_urls_go_by_scheme(tmp_path):
    assert scheme_of(tmp_path / "kb.db") == "sqlite"
    assert scheme_of("C:/docs/kb.db") == "sqlite"
    assert scheme_of("postgresql://user@/db?host=/run/pg") == "postgresql"
    backend = open_backend(f"sqlite://{tmp_path / 'kb.db'}")
    try:
        assert isinstance(backend, Backend) and backend.path == tmp_path / "kb.db"
        assert isinstance(backend.search_index(HashingEmbedder, "auto"), SearchIndex)
    finally:
        backend.close()


def test_an_unknown_scheme_is_a_one_line_error():
    with pytest.raises(KnowledgeBaseError, match="unknown knowledge base location"):
        KnowledgeBase.open("mysql://localhost/kb")


def test_the_facade_reports_where_the_kb_is(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nFerries leave hourly.", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=HashingEmbedder()) as kb:
        kb.ingest(tmp_path / "a.md")
        assert kb.location == str(tmp_path / "kb.db") and kb.path == tmp_path / "kb.db"
        assert kb.stats()["path"] == kb.location and kb.stats()["file_bytes"] > 0
        assert kb.search("ferries", mode="lexical")[0].title == "A"
