"""The knowledge base on a real PostgreSQL + pgvector: the same behaviour as the SQLite file
(incremental ingest, content-hash skipping, the embedding cache, the embedder record, the
same hits), many KBs and the chat store in one database, and one-line refusals that leave
nothing behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from kb_fixtures import HashingEmbedder, make_corpus

from agentmodes.errors import KnowledgeBaseError
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.store.chat import ChatStore
from pg_support import pg_server, pg_url  # noqa: F401
from test_kb_cli import assert_one_line_error, run_cli

TESTS = str(Path(__file__).resolve().parent)


@pytest.fixture
def corpus(tmp_path):
    return make_corpus(tmp_path / "docs")


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "kb.db")
    return request.getfixturevalue("pg_url") + "&kb=handbuch"


def _schemas(url: str) -> set[str]:
    with psycopg.connect(url.split("&kb=")[0]) as conn:
        return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname "
                                           "LIKE 'kb\\_%'").fetchall()}


def test_incremental_ingest_and_the_embedding_cache_on_both_backends(location, corpus):
    embedder = HashingEmbedder()
    with KnowledgeBase.open(location, embedder=embedder) as kb:
        first = kb.ingest(corpus)
        assert len(first.added) == 4 and first.embedded == len(embedder.passages)
        again = kb.ingest(corpus)
        assert len(again.unchanged) == 4 and again.embedded == 0
        (corpus / "notes.txt").write_text("Ferries leave the harbour every hour.\n\nSince May "
                                          "the last ferry departs at one.", encoding="utf-8")
        (corpus / "plants.pdf").unlink()
        changed = kb.ingest(corpus)
        assert [p.rsplit("/", 1)[1] for p in changed.updated] == ["notes.txt"]
        assert [p.rsplit("/", 1)[1] for p in changed.removed] == ["plants.pdf"]
        assert changed.embedded == 1                 # only the paragraph never seen before
        stats = kb.stats()
        assert stats["documents"] == 3 and stats["vectors"] == stats["chunks"]
        assert stats["pending_embeddings"] == 0 and stats["embedder"] == "test:hashing-64"
        assert kb.check() == []
        docs = kb.documents()
        assert [d.name for d in docs] == ["agentur.md", "notes.txt", "volcano.html"]
        assert kb.passages(docs[0].id)[0].text.startswith("Die DG Agentur")
    with pytest.raises(KnowledgeBaseError, match="was built with embedder 'test:hashing-64'"):
        KnowledgeBase.open(location, embedder=HashingEmbedder(name="test:other", dim=8))


def test_postgresql_gives_the_hits_sqlite_gives(pg_url, tmp_path, corpus):
    results = {}
    for name, where in (("sqlite", str(tmp_path / "kb.db")), ("pg", pg_url + "&kb=same")):
        with KnowledgeBase.open(where, embedder=HashingEmbedder()) as kb:
            kb.ingest(corpus)
            results[name] = {mode: [(h.title, h.text, round(h.score, 4), round(h.confidence, 4))
                                    for h in kb.search(query, mode=mode, k=4)]
                             for mode in ("lexical", "semantic", "hybrid")
                             for query in ("Öffnungszeiten der Agentur", "ferry at midnight")}
    assert results["pg"] == results["sqlite"]


def test_one_database_holds_the_chat_store_and_many_knowledge_bases(pg_url, tmp_path, corpus):
    store = ChatStore.open(pg_url)
    store.create_chatbot("hilfe", {})
    with KnowledgeBase.open(pg_url + "&kb=a", embedder=HashingEmbedder()) as a, \
            KnowledgeBase.open(pg_url + "&kb=b", embedder=HashingEmbedder()) as b:
        a.ingest(corpus / "agentur.md")
        b.ingest(corpus / "notes.txt")
        assert a.stats()["documents"] == b.stats()["documents"] == 1
        assert a.search("Öffnungszeit", mode="lexical")[0].title == "Handbuch der DG Agentur"
        assert b.search("Öffnungszeit", mode="lexical") == []
        assert a.location == pg_url + "&kb=a"
    assert {"kb_a", "kb_b"} <= _schemas(pg_url)
    assert [bot.name for bot in store.list_chatbots()] == ["hilfe"]


def test_a_second_process_sees_documents_ingested_by_the_first(pg_url, corpus):
    url = pg_url + "&kb=shared"
    with KnowledgeBase.open(url, embedder=HashingEmbedder()) as reader:
        assert reader.search("ferries", mode="lexical") == []
        script = textwrap.dedent(f"""
            import sys; sys.path.insert(0, {TESTS!r})
            from kb_fixtures import HashingEmbedder
            from agentmodes.knowledge.base import KnowledgeBase
            with KnowledgeBase.open({url!r}, embedder=HashingEmbedder()) as kb:
                kb.ingest({str(corpus / 'notes.txt')!r})
        """)
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        assert reader.search("ferries", mode="lexical")[0].source.endswith("notes.txt")


def test_a_kb_url_without_a_name_in_a_chat_database_is_refused(pg_url):
    ChatStore.open(pg_url).close()
    with pytest.raises(KnowledgeBaseError) as err:
        KnowledgeBase.open(pg_url)
    assert "is an agentmodes chat database" in str(err.value) and "kb=" in str(err.value)
    assert _schemas(pg_url) == set()               # nothing written
    KnowledgeBase.open(pg_url + "&kb=default").close()     # named, it is welcome there


def test_a_database_without_pgvector_is_refused_and_left_alone(pg_server):
    url = pg_server.without_pgvector("no_vector")
    with pytest.raises(KnowledgeBaseError, match="has no pgvector extension"):
        KnowledgeBase.open(url + "&kb=x")
    assert _schemas(url) == set()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pg_extension WHERE extname = 'vector'"
                            ).fetchone()[0] == 0
    ChatStore.open(url).close()                    # the chat store needs no pgvector


def test_missing_kb_unreachable_server_and_bad_credentials_are_one_line(pg_server, pg_url,
                                                                      tmp_path):
    with pytest.raises(KnowledgeBaseError, match="no knowledge base 'nope'"):
        KnowledgeBase.open(pg_url + "&kb=nope", create=False)
    with pytest.raises(KnowledgeBaseError, match="cannot reach PostgreSQL"):
        KnowledgeBase.open(f"postgresql://postgres@/x?host={tmp_path}&kb=a")
    pg_server.password_role("kbuser", "geheim")
    with pytest.raises(KnowledgeBaseError, match="refused the credentials") as err:
        KnowledgeBase.open(pg_server.url("postgres", user="kbuser", password="falsch"))
    assert "falsch" not in str(err.value)


def test_cli_ingest_and_search_on_postgresql(pg_url, corpus):
    url = pg_url + "&kb=cli"
    ingest = run_cli("ingest", str(corpus), "--kb", url, "--no-embed")
    assert ingest.returncode == 0, ingest.stderr
    found = run_cli("search", "Öffnungszeiten", "--kb", url, "--mode", "lexical", "--json")
    assert found.returncode == 0, found.stderr
    assert '"title": "Handbuch der DG Agentur"' in found.stdout


def test_cli_bad_databases_fail_in_one_line_and_write_nothing(pg_server, pg_url, corpus,
                                                            tmp_path):
    ChatStore.open(pg_url).close()
    # Exit 1: a runtime failure (the database is not what the command needs).
    assert_one_line_error(run_cli("ingest", str(corpus), "--kb", pg_url, "--no-embed"),
                          "is an agentmodes chat database", code=1)
    no_vector = pg_server.without_pgvector("cli_no_vector")
    assert_one_line_error(run_cli("ingest", str(corpus), "--kb", no_vector + "&kb=x",
                                  "--no-embed"), "has no pgvector extension", code=1)
    nowhere = f"postgresql://u@/d?host={tmp_path}"
    assert_one_line_error(run_cli("search", "x", "--kb", nowhere), "cannot reach PostgreSQL",
                          code=1)
    assert_one_line_error(run_cli("serve", "--db", nowhere, "--port", "8"),
                          "cannot reach PostgreSQL", code=1)
    pg_server.password_role("cliuser", "richtig")
    assert_one_line_error(run_cli("serve", "--db", pg_server.url("postgres", "cliuser", "x"),
                                  "--port", "8"), "refused the credentials", code=1)
    assert _schemas(pg_url) == set() and _schemas(no_vector) == set()
    assert list(tmp_path.glob("*.db")) == []


def test_a_chatbots_own_kb_is_made_in_the_chat_database_and_dropped_with_it(pg_url, tmp_path):
    from agentmodes.llm.scripted import ScriptedModel
    from agentmodes.service import AgentChatService

    service = AgentChatService(ChatStore.open(pg_url), llm_factory=lambda: ScriptedModel([]),
                               data_dir=tmp_path / "data",
                               kb_opener=lambda where: KnowledgeBase.open(
                                   where, embedder=HashingEmbedder()))
    bot = service.create_chatbot("fahrplan")
    assert bot.kb_path == f"chat-database:chatbot-{bot.id}"
    job = service.upload("fahrplan", [("bus.md", "# Bus\n\nDer Bus fährt um 7 Uhr.".encode())])
    for _ in range(300):
        if service.store.get_job(job.id).status in ("done", "failed"):
            break
        __import__("time").sleep(0.1)
    assert service.store.get_job(job.id).status == "done"
    assert f"kb_chatbot-{bot.id}" in _schemas(pg_url)
    service.delete_chatbot("fahrplan")
    assert _schemas(pg_url) == set()
    service.close()
