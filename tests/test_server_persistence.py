"""`agentmodes serve` as a user runs it: a restart loses no conversation, and two server
processes on one SQLite file serve concurrent chats without corrupting it."""

from __future__ import annotations

import socket
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx

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


def test_jobs_of_a_dead_server_are_marked_failed_at_start(tmp_path):
    from sqlalchemy import update

    from agentmodes.store.chat import ChatStore, ingest_jobs

    db, kb, script = tmp_path / "chat.db", _kb(tmp_path), write_script(tmp_path / "s.json")
    with serve_process(db, kb, script):
        pass
    store = ChatStore.open(str(db))
    bot = store.get_chatbot("default")
    dead, alive = store.create_job(bot, ["a.md"]), store.create_job(bot, ["b.md"])
    with store.engine.begin() as conn:     # a job left running by a process that is gone
        conn.execute(update(ingest_jobs).where(ingest_jobs.c.id == dead.id)
                     .values(status="running", owner=f"{socket.gethostname()}:999999999"))
    with serve_process(db, kb, script) as url:
        jobs = {j["id"]: j for j in httpx.get(f"{url}/api/chatbots/default/jobs").json()}
    assert jobs[dead.id]["status"] == "failed" and "upload again" in jobs[dead.id]["error"]
    assert jobs[alive.id]["status"] == "queued"        # its owner (this test) still runs
    store.close()
