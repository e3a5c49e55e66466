"""Issue 11, items 8 and 10: input that used to give a 500, a traceback or a lost answer.

Each test replays the input from the issue: a lone surrogate in settings and in a body, a
1 MB message echoed back, ?offset=2**70, `serve --db` on a non-SQLite file or a folder,
AGENTMODES_MAX_REQUEST_BYTES=-1, `--host "[::1]"`, a malformed SSE chunk from the LLM, and
kill -9 during an answer.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from llm_fault_server import FaultServer, sse, text_chunk

from agentmodes.server import ServerConfig, create_app
from agentmodes.server.process import free_port
from server_support import ROOT, make_service, open_kb, write_docs

SURROGATE_BODY = '{"name": "bad", "settings": {"system_prompt": "\\ud800"}}'


@pytest.fixture
def client(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig()), raise_server_exceptions=False) as c:
        yield c
    service.close()


def test_a_lone_surrogate_is_refused_and_cannot_break_listing(client, tmp_path):
    reply = client.post("/api/chatbots", content=SURROGATE_BODY,
                        headers={"Content-Type": "application/json"})
    assert reply.status_code == 422 and "surrogate" in reply.text
    chat = client.post("/api/chat", content='{"message": "Hallo \\udc00"}',
                       headers={"Content-Type": "application/json"})
    assert chat.status_code == 422
    assert client.get("/api/chatbots").status_code == 200
    # One stored by an older version (settings are JSON: the escape went in as it came) no
    # longer breaks the list.
    with sqlite3.connect(tmp_path / "chat.db") as conn:
        conn.execute("UPDATE chatbots SET settings = json_set(settings, '$.system_prompt', "
                     "json('\"Vorher \\ud800 gespeichert\"')) WHERE name = 'default'")
    listed = client.get("/api/chatbots")
    assert listed.status_code == 200
    assert listed.json()[0]["settings"]["system_prompt"].startswith("Vorher ")
    assert client.get("/").status_code == 200


def test_a_bad_body_is_not_echoed_back(client):
    huge = "x" * 1_000_000
    reply = client.post("/api/chat", json={"message": huge})
    assert reply.status_code == 422
    assert len(reply.content) < 2_000 and huge[:1000] not in reply.text
    assert reply.json()["detail"][0]["loc"] == ["body", "message"]


def test_offset_beyond_any_list_is_422_not_500(client):
    assert client.get(f"/api/conversations?offset={2**70}").status_code == 422
    assert client.get(f"/api/conversations?offset={10**9}").status_code == 200


def _serve(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "serve", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def _one_line(result, fragment, code=2):
    """One line on stderr; exit 2 for a bad setting, 1 for a runtime failure (cli/main.py)."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0
    assert fragment in result.stderr


def test_serve_on_a_file_that_is_not_a_database_or_on_a_folder(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    _one_line(_serve("--db", str(text), "--port", str(free_port())), "is not an SQLite database",
              code=1)
    assert text.read_text() == "just some notes\n"
    _one_line(_serve("--db", str(tmp_path), "--port", str(free_port())), "is a directory",
              code=1)


def test_a_negative_size_limit_is_one_line(tmp_path):
    result = _serve("--db", str(tmp_path / "c.db"), env={"AGENTMODES_MAX_REQUEST_BYTES": "-1"})
    _one_line(result, "AGENTMODES_MAX_REQUEST_BYTES must be at least")
    _one_line(_serve("--db", str(tmp_path / "c.db"), env={"AGENTMODES_RATE_CHAT": "lots"}),
              "AGENTMODES_RATE_CHAT must look like")


def _start(db, *args, env=None):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                             "serve", "--db", str(db), "--port", str(port), "--no-access-log",
                             *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, port


def _wait_healthy(url, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("server did not start")


def test_serve_on_ipv6_loopback_in_brackets(tmp_path):
    proc, port = _start(tmp_path / "c.db", "--host", "[::1]")
    try:
        _wait_healthy(f"http://[::1]:{port}", proc)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert f"http://[::1]:{port}/" in proc.stderr.read()


@pytest.fixture
def fault_llm():
    server = FaultServer()
    yield server
    server.close()


def _kb(tmp_path):
    path = tmp_path / "kb.db"
    with open_kb(str(path)) as kb:
        kb.ingest([str(write_docs(tmp_path / "docs"))])
    return path


def test_a_malformed_stream_chunk_is_one_line_from_ask(tmp_path, fault_llm):
    fault_llm.play(sse([{"object": "chat.completion.chunk", "choices": "not a list"}]))
    env = {**os.environ, "OPENAI_BASE_URL": fault_llm.url, "OPENAI_API_KEY": "x"}
    result = subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                             "ask", "Wann offen?", "--kb", str(_kb(tmp_path)), "--llm",
                             "openai:fake"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "AttributeError" not in result.stderr
    assert "not a chat completion chunk" in result.stderr


def test_kill_9_mid_answer_leaves_a_failed_answer_after_restart(tmp_path, fault_llm):
    # The model streams one token per second: the answer is in flight when the kill comes.
    fault_llm.play(sse([text_chunk("REFLECTION: ")] + [text_chunk("lange ")] * 60, delay=1.0))
    db, kb = tmp_path / "chat.db", _kb(tmp_path)
    env = {"OPENAI_BASE_URL": fault_llm.url, "OPENAI_API_KEY": "x"}
    proc, port = _start(db, "--kb", str(kb), "--llm", "openai:fake", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        with httpx.stream("POST", f"{url}/api/chat/stream", json={"message": "Wann offen?"},
                          timeout=30) as events:
            for line in events.iter_lines():
                if "reflection_delta" in line:
                    break
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=15)
    proc, port = _start(db, "--kb", str(kb), "--llm", "openai:fake", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        [conv] = httpx.get(f"{url}/api/conversations").json()
        messages = httpx.get(f"{url}/api/conversations/{conv['id']}").json()["messages"]
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["status"] == "error"
    assert "stopped before this answer was finished" in messages[1]["error"]
    json.dumps(messages)
