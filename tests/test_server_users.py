"""Issue 11, item 11: conversations belong to whoever started them.

Before: everyone holding the chat key listed, read and appended to every conversation.
Now an admin creates users, each with a key of its own; a user sees and continues only
its own conversations (someone else's is a 404 like an unknown id), admins see all.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from agentmodes.server import ServerConfig, create_app
from agentmodes.store.chat import ChatStore
from server_support import ROOT, make_service, stream_ws

ADMIN = "admin-key-Zq81"


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def client(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig(admin_key=ADMIN))) as c:
        yield c
    service.close()


def _user(client, name, role="chat"):
    reply = client.post("/api/users", json={"name": name, "role": role}, headers=bearer(ADMIN))
    assert reply.status_code == 201, reply.text
    return reply.json()["key"]


def _ask(client, key, **body):
    reply = client.post("/api/chat", json={"message": "Wann offen?", **body}, headers=bearer(key))
    return reply


def test_a_user_cannot_list_read_or_continue_another_users_conversation(client):
    alice, bob = _user(client, "alice"), _user(client, "bob")
    mine = _ask(client, alice).json()["conversation_id"]
    assert [c["id"] for c in client.get("/api/conversations", headers=bearer(alice)).json()] \
        == [mine]
    # Bob: the list is empty, reading and appending are 404 as for an unknown id.
    assert client.get("/api/conversations", headers=bearer(bob)).json() == []
    assert client.get(f"/api/conversations/{mine}", headers=bearer(bob)).status_code == 404
    assert _ask(client, bob, conversation_id=mine).status_code == 404
    with client.websocket_connect("/api/ws", headers=bearer(bob)) as ws:
        [event] = stream_ws(ws, {"message": "Und Samstag?", "conversation_id": mine})
        assert event["status"] == "error" and "no conversation" in event["message"]
    # Alice's conversation still has only her two messages.
    messages = client.get(f"/api/conversations/{mine}", headers=bearer(alice)).json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    # Alice continues her own; the admin sees everyone's.
    assert _ask(client, alice, conversation_id=mine).status_code == 200
    theirs = _ask(client, bob).json()["conversation_id"]
    assert {c["id"] for c in client.get("/api/conversations", headers=bearer(ADMIN)).json()} \
        == {mine, theirs}
    assert client.get(f"/api/conversations/{theirs}", headers=bearer(ADMIN)).status_code == 200


def test_users_are_made_by_admins_and_keys_die_with_them(client):
    alice = _user(client, "alice")
    assert client.post("/api/users", json={"name": "eve", "role": "admin"},
                       headers=bearer(alice)).status_code == 403
    assert client.post("/api/users", json={"name": "alice"},
                       headers=bearer(ADMIN)).status_code == 409
    listed = client.get("/api/users", headers=bearer(ADMIN)).json()
    assert [(u["name"], u["role"]) for u in listed] == [("alice", "chat")]
    assert "key" not in listed[0] and "key_hash" not in listed[0]
    old = _ask(client, alice).json()["conversation_id"]
    assert client.delete("/api/users/alice", headers=bearer(ADMIN)).status_code == 204
    assert client.get("/api/chatbots", headers=bearer(alice)).status_code == 401
    # A new alice is another user: the old alice's conversation is not hers.
    again = _user(client, "alice")
    assert client.get(f"/api/conversations/{old}", headers=bearer(again)).status_code == 404
    rotated = client.post("/api/users/alice/key", headers=bearer(ADMIN)).json()["key"]
    assert client.get("/api/chatbots", headers=bearer(again)).status_code == 401
    assert client.get("/api/chatbots", headers=bearer(rotated)).status_code == 200


def test_a_user_admin_sees_all_and_a_user_turns_auth_on(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig())) as keyless:
        assert keyless.get("/api/health").json()["auth"] is False
        # The first user of a server without AGENTMODES_API_KEY must be able to administer.
        assert keyless.post("/api/users", json={"name": "carol"}).status_code == 422
        root = keyless.post("/api/users", json={"name": "root", "role": "admin"}).json()["key"]
        assert keyless.get("/api/health").json()["auth"] is True
        assert keyless.get("/api/chatbots").status_code == 401
        carol = keyless.post("/api/users", json={"name": "carol"},
                             headers=bearer(root)).json()["key"]
        conv = _ask(keyless, carol).json()["conversation_id"]
        assert [c["id"] for c in keyless.get("/api/conversations",
                                             headers=bearer(root)).json()] == [conv]
    service.close()


def test_keys_are_stored_only_as_hashes(tmp_path):
    service = make_service(tmp_path)
    _, key = service.create_user("dora", "admin")
    with sqlite3.connect(tmp_path / "chat.db") as conn:
        dump = "\n".join(str(row) for row in conn.execute("SELECT * FROM api_users"))
    assert "dora" in dump and key not in dump
    assert service.authenticate(key).name == "dora"
    assert service.authenticate(key + "x") is None
    service.close()


def test_an_older_chat_database_gains_owners(tmp_path):
    """A database from before owners existed opens; its conversations are admin-only."""
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript("""
            CREATE TABLE chatbots (id INTEGER PRIMARY KEY, name VARCHAR(100) NOT NULL UNIQUE,
                description TEXT NOT NULL, language VARCHAR(8) NOT NULL, kb_path TEXT,
                settings JSON NOT NULL, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL);
            CREATE TABLE conversations (id VARCHAR(32) PRIMARY KEY, chatbot_id INTEGER NOT NULL,
                title TEXT NOT NULL, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL);
            CREATE TABLE chatbot_messages (id INTEGER PRIMARY KEY, conversation_id VARCHAR(32)
                NOT NULL, role VARCHAR(16) NOT NULL, content TEXT NOT NULL, status VARCHAR(16)
                NOT NULL, mode VARCHAR(16), agent_trace JSON, stream_metadata JSON, usage JSON,
                sources JSON, timings JSON, error TEXT, created_at DATETIME NOT NULL);
            INSERT INTO chatbots VALUES (1, 'default', '', 'auto', NULL, '{}',
                '2026-01-01 00:00:00', '2026-01-01 00:00:00');
            INSERT INTO conversations VALUES ('c0ffee', 1, 'old', '2026-01-01 00:00:00',
                '2026-01-01 00:00:00');
        """)
    store = ChatStore.open(str(db))
    [conv] = store.list_conversations()
    assert conv.id == "c0ffee" and conv.owner is None
    assert store.list_conversations(owner="user:1") == []
    store.close()


def test_users_from_the_command_line(tmp_path):
    db = str(tmp_path / "chat.db")

    def users(*args):
        return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                               "users", *args, "--db", db], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)

    first = users("add", "erin")
    assert first.returncode == 2 and "first user must be an admin" in first.stderr
    made = users("add", "root", "--role", "admin")
    assert made.returncode == 0 and made.stdout.strip().startswith("am_")
    assert "not shown again" in made.stderr
    assert users("add", "erin").returncode == 0
    listed = users("list")
    assert [line.split("\t")[:2] for line in listed.stdout.splitlines()] == \
        [["erin", "chat"], ["root", "admin"]]
    assert made.stdout.strip() not in listed.stdout
    gone = users("remove", "nobody")
    assert gone.returncode == 1 and "no user named 'nobody'" in gone.stderr
