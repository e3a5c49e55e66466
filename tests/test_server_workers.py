"""Several workers on one PostgreSQL database, as a deployment runs them: `serve` processes
started by hand and `serve --workers N`. Any worker answers any conversation, sees the
chatbots the others made, shows every job's progress, and finishes the jobs of a worker
that was killed."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.server.process import running_server
from embedding_server import HashingEmbeddingServer
from pg_support import pg_server, pg_url  # noqa: F401
from server_support import ANSWER, write_docs, write_script

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def embeddings():
    server = HashingEmbeddingServer()
    yield server
    server.close()


@pytest.fixture
def setup(tmp_path, embeddings):
    """A KB file with the contact page, the reply script and the workers' environment."""
    kb = tmp_path / "kb.db"
    with KnowledgeBase.open(kb, embedder=embeddings.embedder()) as base:
        base.ingest([str(write_docs(tmp_path / "docs"))])
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENTMODES_API_KEY", "AGENTMODES_CHAT_API_KEY")}
    env.update(embeddings.env, AGENTMODES_JOB_POLL_SECONDS="0.2",
               AGENTMODES_JOB_LEASE_SECONDS="2", AGENTMODES_DATA_DIR=str(tmp_path / "data"))
    return {"kb": kb, "script": write_script(tmp_path / "s.json"), "env": env}


def _serve(db: str, setup: dict, **kwargs):
    return running_server(db, kb=setup["kb"], llm=f"scripted:{setup['script']}",
                          env=setup["env"], **kwargs)


def _wait_job(url: str, job_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/api/jobs/{job_id}", timeout=10).json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_processes_started_by_hand_share_chatbots_conversations_and_jobs(pg_url, setup):
    with _serve(pg_url, setup) as a, _serve(pg_url, setup) as b:
        # A chatbot made through one worker is seen, and changed, through the other.
        made = httpx.post(f"{a}/api/chatbots", json={"name": "zweiter", "settings": {
            "agent_mode": "react"}}, timeout=30)
        assert made.status_code == 201, made.text
        assert httpx.get(f"{b}/api/chatbots/zweiter").json()["settings"]["agent_mode"] == "react"
        changed = httpx.patch(f"{b}/api/chatbots/zweiter",
                              json={"settings": {"agent_mode": "act"}}, timeout=30)
        assert changed.status_code == 200
        assert httpx.get(f"{a}/api/chatbots/zweiter").json()["settings"]["agent_mode"] == "act"

        # A conversation started on A continues on B, streamed; A sees all four messages.
        first = httpx.post(f"{a}/api/chat", json={"message": "Wann offen?"}, timeout=60).json()
        assert first["content"] == ANSWER
        with httpx.stream("POST", f"{b}/api/chat/stream", timeout=60, json={
                "message": "Und samstags?", "conversation_id": first["conversation_id"]}) as r:
            events = [json.loads(line[6:]) for line in r.iter_lines()
                      if line.startswith("data: ")]
        assert events[-1]["done"] and events[-1]["conversation_id"] == first["conversation_id"]
        stored = httpx.get(f"{a}/api/conversations/{first['conversation_id']}").json()
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant"] * 2

        # An upload taken by A is a job B shows and may run; its documents are listed by both.
        files = [("files", (f"faehre-{i}.md", f"# Fähre {i}\n\nDie Fähre {i} fährt um "
                            f"{8 + i} Uhr.\n".encode(), "text/markdown")) for i in range(3)]
        job = httpx.post(f"{a}/api/chatbots/default/documents", files=files, timeout=30).json()
        assert job["status"] in ("queued", "running", "done")
        done = _wait_job(b, job["id"])
        assert done["status"] == "done", done
        assert sorted(done["report"]["added"]) == [f"faehre-{i}.md" for i in range(3)]
        assert [d["name"] for d in httpx.get(f"{b}/api/chatbots/default/documents").json()] \
            == [f"faehre-{i}.md" for i in range(3)]
        served = httpx.get(f"{b}/api/chatbots/default/documents/faehre-1.md")
        assert "9 Uhr" in served.text


def test_a_new_chatbots_knowledge_base_lives_in_the_chat_database(pg_url, setup, embeddings):
    with _serve(pg_url, setup) as a, _serve(pg_url, setup) as b:
        bot = httpx.post(f"{a}/api/chatbots", json={"name": "fahrplan"}, timeout=30).json()
        files = [("files", ("bus.md", "# Bus\n\nDer Bus 12 fährt um 7 Uhr.\n".encode(),
                            "text/markdown"))]
        job = httpx.post(f"{b}/api/chatbots/fahrplan/documents", files=files, timeout=30).json()
        assert _wait_job(a, job["id"])["status"] == "done"
    # No KB file anywhere: the chatbot's KB is a schema of the chat database.
    assert not list(Path(setup["env"]["AGENTMODES_DATA_DIR"]).glob("**/*.db"))
    with KnowledgeBase.open(f"{pg_url}&kb=chatbot-{bot['id']}", create=False,
                            embedder=embeddings.embedder()) as kb:
        assert kb.search("Bus 12", mode="hybrid", k=1)[0].title == "Bus"


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _worker_pids(supervisor: int, count: int, timeout: float = 60) -> list[int]:
    """The uvicorn worker processes (children started by multiprocessing spawn)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in _children(supervisor)
                if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        if len(pids) >= count:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"expected {count} workers, found {_children(supervisor)}")


def _messages(pg_url: str) -> list[tuple]:
    engine = sa.create_engine("postgresql+psycopg://", creator=lambda: __import__(
        "psycopg").connect(pg_url))
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT role, status, content FROM chatbot_messages")).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_serve_workers_answers_concurrent_chats_and_persists_every_message(pg_url, setup):
    procs: list = []
    with _serve(pg_url, setup, workers=2, process=procs) as url:
        assert len(_worker_pids(procs[0].pid, 2)) == 2

        def chat(i: int) -> dict:
            reply = httpx.post(f"{url}/api/chat", json={"message": f"Frage {i}?"}, timeout=120)
            reply.raise_for_status()
            return reply.json()

        with ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(chat, range(20)))
    assert all(a["status"] == "complete" and a["content"] == ANSWER for a in answers)
    rows = _messages(pg_url)
    assert sum(1 for r in rows if r[:2] == ("assistant", "complete")) == 20
    assert sum(1 for r in rows if r[0] == "user") == 20


def test_a_killed_workers_job_is_reclaimed_and_finished(pg_url, setup, embeddings):
    embeddings.delay = 1.5          # each embedding request takes a while: time to kill
    procs: list = []
    with _serve(pg_url, setup, workers=2, process=procs) as url:
        _worker_pids(procs[0].pid, 2)
        files = [("files", (f"bus-{i}.md", (f"# Bus {i}\n\n" + f"Linie {i} fährt. " * 1500)
                            .encode(), "text/markdown")) for i in range(4)]
        job = httpx.post(f"{url}/api/chatbots/default/documents", files=files, timeout=30).json()
        engine = sa.create_engine("postgresql+psycopg://", creator=lambda: __import__(
            "psycopg").connect(pg_url))
        deadline = time.monotonic() + 60
        owner = None
        while time.monotonic() < deadline and owner is None:
            with engine.connect() as conn:
                row = conn.execute(sa.text("SELECT status, owner, progress FROM ingest_jobs "
                                           "WHERE id = :id"), {"id": job["id"]}).first()
            if row.status == "running" and (row.progress or {}).get("phase") == "embed":
                owner = row.owner
            time.sleep(0.05)
        assert owner, "the job never reached the embedding phase"
        os.kill(int(owner.rpartition(":")[2]), signal.SIGKILL)   # the worker running it
        embeddings.delay = 0.0
        done = _wait_job(url, job["id"])
        with engine.connect() as conn:
            final_owner = conn.execute(sa.text("SELECT owner FROM ingest_jobs WHERE id = :id"),
                                       {"id": job["id"]}).scalar_one()
        engine.dispose()
    assert done["status"] == "done", done
    assert done["attempts"] == 2 and final_owner != owner
    report = done["report"]
    assert sorted(report["added"] + report["unchanged"]) == [f"bus-{i}.md" for i in range(4)]
    assert report["pending_embeddings"] == 0
    with KnowledgeBase.open(setup["kb"], embedder=embeddings.embedder()) as base:
        assert base.stats()["documents"] == 5
        assert base.search("Linie 2 fährt", mode="hybrid", k=1)[0].title == "Bus 2"
