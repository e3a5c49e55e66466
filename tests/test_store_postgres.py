"""The chat store on a real PostgreSQL behaves as on SQLite; bad locations fail in one line.

Every test runs against a fresh database on the session's pgserver (see pg_support.py).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from agentmodes.errors import ConfigError
from agentmodes.store.chat import ChatStore, ConflictError, NotFoundError
from agentmodes.store.memory import ReflexionMemoryStore
from agentmodes.store.urls import DatabaseError, parse_postgres, redact
from pg_support import pg_server, pg_url  # noqa: F401


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "chat.db")
    return request.getfixturevalue("pg_url")


def test_chatbots_conversations_messages_and_jobs_round_trip(location):
    store = ChatStore.open(location)
    bot = store.create_chatbot("hilfe", {"agent_mode": "react"}, language="de")
    with pytest.raises(ConflictError):
        store.create_chatbot("hilfe", {})
    conv = store.create_conversation(bot, "Öffnungszeiten")
    store.add_message(conv.id, "user", "Wann offen?")
    answer = store.add_message(conv.id, "assistant", "Montag bis Freitag [1].",
                               agent_trace={"steps": [{"action": "rag_search"}]},
                               usage={"total_tokens": 12}, sources=[{"title": "Kontakt"}])
    assert store.get_message(answer.id).agent_trace == {"steps": [{"action": "rag_search"}]}
    assert [m.role for m in store.list_messages(conv.id)] == ["user", "assistant"]
    assert [m.content for m in store.list_messages(conv.id, last=1)] == ["Montag bis Freitag [1]."]
    listed = store.list_conversations(bot)
    assert [(c.id, c.message_count, c.chatbot) for c in listed] == [(conv.id, 2, "hilfe")]
    assert store.get_conversation(conv.id).created_at.endswith("+00:00")
    job = store.create_job(bot, ["a.md"])
    store.update_job(job.id, status="done", report={"added": ["a.md"]})
    assert store.get_job(job.id).report == {"added": ["a.md"]}
    store.delete_chatbot("hilfe")
    with pytest.raises(NotFoundError):
        store.get_conversation(conv.id)
    assert store.count_messages() == 0
    store.close()


def test_a_second_store_on_the_same_database_sees_every_write(location):
    first, second = ChatStore.open(location), ChatStore.open(location)
    bot = first.create_chatbot("a", {})
    second.update_chatbot("a", description="changed by the other worker")
    assert first.get_chatbot("a").description == "changed by the other worker"
    conv = second.create_conversation(bot)
    first.add_message(conv.id, "user", "hallo")
    assert second.get_conversation(conv.id).message_count == 1
    first.close()
    second.close()


def test_reflexion_memory_on_both_backends(location):
    memory = ReflexionMemoryStore(location)
    for n in range(5):
        memory.append("task", f"lesson {n}")
    assert memory.load("task") == ["lesson 2", "lesson 3", "lesson 4"]
    memory.close()


def test_unix_socket_url_in_libpq_form_opens(pg_server):
    # postgresql://user@/db?host=/run/dir: no host in the authority, the socket dir as host=.
    url = pg_server.create_database("socket_form")
    assert "@/socket_form?host=/" in url
    store = ChatStore.open(url)
    assert store.list_chatbots() == []
    store.close()


def test_unreachable_server_is_one_line(tmp_path):
    url = f"postgresql://postgres@/chat?host={tmp_path}/no-server-here"
    with pytest.raises(DatabaseError) as err:
        ChatStore.open(url)
    message = str(err.value)
    assert message.startswith("cannot reach PostgreSQL at postgresql://postgres@/chat")
    assert "\n" not in message and "no-server-here" in message


def test_wrong_password_is_one_line_and_masks_the_password(pg_server):
    pg_server.password_role("alice", "right")
    with pg_server.admin() as conn:
        conn.execute('CREATE DATABASE alice_db OWNER alice')
    with pytest.raises(DatabaseError) as err:
        ChatStore.open(pg_server.url("alice_db", user="alice", password="wrong"))
    message = str(err.value)
    assert message.startswith("PostgreSQL refused the credentials for postgresql://alice:***@")
    assert "wrong" not in message and "\n" not in message
    ChatStore.open(pg_server.url("alice_db", user="alice", password="right")).close()


def test_unknown_role_and_missing_database_are_one_line(pg_server):
    with pytest.raises(DatabaseError, match="refused the credentials"):
        ChatStore.open(pg_server.url("postgres", user="nobody"))
    with pytest.raises(DatabaseError, match="no such PostgreSQL database"):
        ChatStore.open(pg_server.url("does_not_exist"))


def test_url_parsing_keeps_libpq_form_and_takes_our_kb_parameter():
    url = parse_postgres("postgresql://u:secret@/db?host=/run/pg&kb=handbuch&sslmode=disable")
    assert url.conninfo == "postgresql://u:secret@/db?host=/run/pg&sslmode=disable"
    assert url.kb == "handbuch" and "secret" not in url.display
    assert parse_postgres("postgresql+psycopg://u@h/db").conninfo == "postgresql://u@h/db"
    assert redact("postgresql://u:p%40ss@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql:///db?password=x&host=/s") == "postgresql:///db?password=***&host=/s"
    with pytest.raises(ConfigError, match="knowledge base name"):
        parse_postgres("postgresql://u@/db?kb=../x")
    with pytest.raises(ConfigError, match="unsupported database 'mysql'"):
        ChatStore.open("mysql://u@h/db")


def test_tables_live_in_postgresql_not_in_a_file(pg_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ChatStore.open(pg_url).create_chatbot("x", {})
    engine = sa.create_engine("postgresql+psycopg://", creator=lambda: __import__(
        "psycopg").connect(pg_url))
    with engine.connect() as conn:
        names = set(sa.inspect(conn).get_table_names())
    assert {"chatbots", "conversations", "chatbot_messages", "ingest_jobs",
            "reflexion_memory", "alembic_version"} <= names
    assert list(tmp_path.iterdir()) == []
