"""Migrations of the application database: on SQLite and on a real PostgreSQL, the schema
the revisions build is exactly what the code declares; old files are upgraded in place;
workers starting at once migrate once; a newer database is refused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from agentmodes.store import migrate
from agentmodes.store.chat import ChatStore
from agentmodes.store.engine import make_engine
from agentmodes.store.schema import metadata
from agentmodes.store.urls import DatabaseError
from pg_support import pg_server, pg_url  # noqa: F401


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "chat.db")
    return request.getfixturevalue("pg_url")


def _differences(engine) -> list:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata)


def test_migrated_schema_is_the_declared_schema(location):
    store = ChatStore.open(location)
    assert _differences(store.engine) == []
    with store.engine.connect() as conn:
        assert migrate.current(conn) == migrate.head()
    store.close()


def test_a_file_from_before_migrations_is_upgraded_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(LEGACY_SCHEMA)
        conn.execute("INSERT INTO chatbots (name, description, language, settings, created_at, "
                     "updated_at) VALUES ('old', '', 'auto', '{}', '2026-01-01 00:00:00', "
                     "'2026-01-01 00:00:00')")
    store = ChatStore.open(str(path))
    assert [b.name for b in store.list_chatbots()] == ["old"]
    assert _differences(store.engine) == []
    store.close()


# What `metadata.create_all` made before migrations existed (the schema of every chat
# database written by agentmodes up to then), verbatim from such a file.
LEGACY_SCHEMA = """
CREATE TABLE chatbots (
	id INTEGER NOT NULL, 
	name VARCHAR(100) NOT NULL, 
	description TEXT NOT NULL, 
	language VARCHAR(8) NOT NULL, 
	kb_path TEXT, 
	settings JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (name)
);
CREATE TABLE reflexion_memory (
	id INTEGER NOT NULL, 
	task_key VARCHAR(255) NOT NULL, 
	reflection TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_reflexion_memory_task_key ON reflexion_memory (task_key);
CREATE TABLE conversations (
	id VARCHAR(32) NOT NULL, 
	chatbot_id INTEGER NOT NULL, 
	title TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(chatbot_id) REFERENCES chatbots (id) ON DELETE CASCADE
);
CREATE INDEX ix_conversations_chatbot_id ON conversations (chatbot_id);
CREATE TABLE ingest_jobs (
	id VARCHAR(32) NOT NULL, 
	chatbot_id INTEGER NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	files JSON NOT NULL, 
	progress JSON NOT NULL, 
	report JSON, 
	error TEXT, 
	owner VARCHAR(300), 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(chatbot_id) REFERENCES chatbots (id) ON DELETE CASCADE
);
CREATE TABLE chatbot_messages (
	id INTEGER NOT NULL, 
	conversation_id VARCHAR(32) NOT NULL, 
	role VARCHAR(16) NOT NULL, 
	content TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	mode VARCHAR(16), 
	agent_trace JSON, 
	stream_metadata JSON, 
	usage JSON, 
	sources JSON, 
	timings JSON, 
	error TEXT, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
);
CREATE INDEX ix_chatbot_messages_conversation_id ON chatbot_messages (conversation_id);
"""


def test_workers_starting_at_once_migrate_once(location):
    code = ("import sys; from agentmodes.store.chat import ChatStore; "
            "print(len(ChatStore.open(sys.argv[1]).list_chatbots()))")
    procs = [subprocess.Popen([sys.executable, "-c", code, location], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    engine = make_engine(location)
    with engine.connect() as conn:
        versions = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
    assert [v[0] for v in versions] == [migrate.head()]
    engine.dispose()


def test_threads_opening_one_database_at_once_all_succeed(location):
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: ChatStore.open(location), range(4)))
    stores[0].create_chatbot("shared", {})
    assert all(s.get_chatbot("shared").name == "shared" for s in stores)
    for store in stores:
        store.close()


def test_a_database_from_a_newer_version_is_refused(location):
    ChatStore.open(location).close()
    engine = make_engine(location)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(DatabaseError, match="newer agentmodes"):
        ChatStore.open(location)
