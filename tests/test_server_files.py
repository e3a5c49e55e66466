"""Issue 11, items 2 and 7: what a chatbot leaves on disk, and who may read it.

Replays: delete a chatbot that has an uploaded document, create the next one (it used to get
the same id and inherit the KB and the uploads: listed, downloadable, cited). And: the KB,
the chat database and uploads used to be created 0644, readable by every account.
"""

from __future__ import annotations

import os
import stat
import time

from fastapi.testclient import TestClient

from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.server import ServerConfig, create_app
from agentmodes.store.memory import ReflexionMemoryStore
from server_support import make_service

SECRET = b"# Gehalt\n\nDas Gehalt von Frau Meier betraegt 7.300 Euro im Monat.\n"


def _wait_job(client, job_id):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError("ingest did not finish")


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_deleted_chatbots_files_go_with_it(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig())) as client:
        assert client.post("/api/chatbots", json={"name": "hr"}).status_code == 201
        job = client.post("/api/chatbots/hr/documents",
                          files=[("files", ("gehalt.md", SECRET))]).json()
        assert _wait_job(client, job["id"])["status"] == "done"
        old = service.get_chatbot("hr")
        assert client.delete("/api/chatbots/hr").status_code == 204
        assert not os.path.exists(old.kb_path)
        assert not (tmp_path / "data" / "uploads" / f"chatbot-{old.id}").exists()

        assert client.post("/api/chatbots", json={"name": "neu"}).status_code == 201
        new = service.get_chatbot("neu")
        assert client.get("/api/chatbots/neu/documents").json() == []
        assert client.get("/api/chatbots/neu/documents/gehalt.md").status_code == 404
        assert service.knowledge(new).search("Gehalt Meier", mode="lexical", k=3) == []
    service.close()


def test_stale_files_at_a_new_chatbots_paths_are_not_inherited(tmp_path):
    """A delete that crashed half-way, or a database from before ids were never reused."""
    service = make_service(tmp_path)
    bot = service.create_chatbot("a")
    next_id = bot.id + 1
    stale_uploads = tmp_path / "data" / "uploads" / f"chatbot-{next_id}"
    stale_uploads.mkdir(parents=True)
    (stale_uploads / "gehalt.md").write_bytes(SECRET)
    with KnowledgeBase.open(str(tmp_path / "data" / "kbs" / f"chatbot-{next_id}.db"),
                            embedder=None) as stale:
        stale.ingest([str(stale_uploads / "gehalt.md")], embed=False)
    new = service.create_chatbot("b")
    assert new.id == next_id
    assert list(service.upload_dir(new).iterdir()) == []
    assert service.knowledge(new).search("Gehalt", mode="lexical", k=3) == []
    service.close()


def test_files_the_project_creates_are_owner_only(tmp_path):
    old_umask = os.umask(0o022)             # the usual umask, which made them 0644
    try:
        service = make_service(tmp_path)
        with TestClient(create_app(service, ServerConfig())) as client:
            client.post("/api/chat", json={"message": "Wann offen?"})
            job = client.post("/api/chatbots/default/documents",
                              files=[("files", ("gehalt.md", SECRET))]).json()
            _wait_job(client, job["id"])
            client.post("/api/chatbots", json={"name": "own"})
        bot = service.get_chatbot("default")
        service.knowledge(service.get_chatbot("own"))      # a chatbot's KB, made on first use
        created = [tmp_path / "kb.db", tmp_path / "chat.db",
                   service.upload_dir(bot) / "gehalt.md", service.get_chatbot("own").kb_path]
        memory = ReflexionMemoryStore(tmp_path / "memory.db")
        memory.append("task", "Lesson: search first.")
        memory.close()
        created.append(tmp_path / "memory.db")
        for path in created:
            assert _mode(path) == 0o600, path
        for companion in ("chat.db-wal", "chat.db-shm", "kb.db-wal"):
            if (tmp_path / companion).exists():
                assert _mode(tmp_path / companion) == 0o600, companion
        for folder in (tmp_path / "data", tmp_path / "data" / "uploads", service.upload_dir(bot),
                       tmp_path / "data" / "kbs"):
            assert _mode(folder) == 0o700, folder
        service.close()
    finally:
        os.umask(old_umask)
