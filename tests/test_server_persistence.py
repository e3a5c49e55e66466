"""`agentmodes serve` as a user runs it: a restart loses no conversation, and two server
processes on one SQLite file serve concurrent chats without corrupting it."""

from __future__ import annotations

import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from agentmodes.knowledge.base import KnowledgeBase
from embedding_server import HashingEmbeddingServer
from server_support import ANSWER, open_kb, serve_process, write_docs, write_script


def _kb(tmp_path):
    path = tmp_path / "kb.db"
    with open_kb(str(path)) as kb:
        kb.ingest([str(write_docs(tmp_path / "docs"))])
    return path


def test_restart_keeps_conversations_and_traces(tmp_path):
    db, kb, script = tmp_path / "chat.db", _kb(tmp_path), write_script(tmp_path / "s.json")
    with serve_process(db, kb, script) as url:
        first = httpx.post(f"{url}/api/chat", json={"message": "Wann offen?"}, timeout=30).json()
        assert first["content"] == ANSWER
    with serve_process(db, kb, script) as url:
        convs = httpx.get(f"{url}/api/conversations", timeout=10).json()
        assert [c["id"] for c in convs] == [first["conversation_id"]]
        stored = httpx.get(f"{url}/api/conversations/{first['conversation_id']}",
                           timeout=10).json()["messages"]
        assert stored[1]["agent_trace"] == first["agent_trace"]
        # The conversation continues after the restart.
        follow = httpx.post(f"{url}/api/chat", timeout=30, json={
            "message": "Und samstags?", "conversation_id": first["conversation_id"]}).json()
        assert follow["status"] == "complete"
        assert len(httpx.get(f"{url}/api/conversations/{first['conversation_id']}",
                             timeout=10).json()["messages"]) == 4


def test_two_processes_share_one_sqlite_file(tmp_path):
    db, kb, script = tmp_path / "chat.db", _kb(tmp_path), write_script(tmp_path / "s.json")
    with serve_process(db, kb, script) as a, serve_process(db, kb, script) as b:
        def ask(i: int) -> dict:
            url = (a, b)[i % 2]
            reply = httpx.post(f"{url}/api/chat", json={"message": f"Frage {i}?"}, timeout=60)
            reply.raise_for_status()
            return reply.json()

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, range(24)))
        assert all(m["status"] == "complete" and m["content"] == ANSWER for m in answers)
        # Each process sees what the other wrote.
        seen_by_a = {c["id"] for c in httpx.get(f"{a}/api/conversations?limit=100").json()}
        seen_by_b = {c["id"] for c in httpx.get(f"{b}/api/conversations?limit=100").json()}
        assert seen_by_a == seen_by_b == {m["conversation_id"] for m in answers}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM chatbot_messages").fetchone()[0] == 48
        assert conn.execute("SELECT COUNT(*) FROM chatbots").fetchone()[0] == 1


def test_jobs_of_a_dead_server_are_reclaimed_and_finished_at_start(tmp_path):
    from sqlalchemy import update

    from agentmodes.store.chat import ChatStore, ingest_jobs

    embeddings = HashingEmbeddingServer()
    db, kb, script = tmp_path / "chat.db", tmp_path / "kb.db", write_script(tmp_path / "s.json")
    with KnowledgeBase.open(kb, embedder=embeddings.embedder()) as base:
        base.ingest([str(write_docs(tmp_path / "docs"))])
    store = ChatStore.open(str(db))
    bot = store.create_chatbot("default", {}, kb_path=str(kb))
    dead = store.enqueue_upload(bot, [("a.md", "# A\n\nFähren fahren stündlich.".encode())],
                                owner="gone")
    queued = store.enqueue_upload(bot, [("b.md", b"# B\n\nBusse fahren selten.")], owner="x")
    with store.engine.begin() as conn:     # a job left running by a process that is gone
        conn.execute(update(ingest_jobs).where(ingest_jobs.c.id == dead)
                     .values(status="running", owner=f"{socket.gethostname()}:999999999",
                             attempts=1, lease_expires=4e9))      # lease "valid" for decades
    with serve_process(db, kb, script, env=embeddings.env) as url:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = {j["id"]: j for j in httpx.get(f"{url}/api/chatbots/default/jobs").json()}
            if all(jobs[j]["status"] in ("done", "failed") for j in (dead, queued)):
                break
            time.sleep(0.2)
    assert jobs[dead]["status"] == "done" and jobs[dead]["report"]["added"] == ["a.md"]
    assert jobs[dead]["attempts"] == 2                # claimed again, not started afresh
    assert jobs[queued]["status"] == "done" and jobs[queued]["report"]["added"] == ["b.md"]
    embeddings.close()
