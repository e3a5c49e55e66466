"""API keys and scopes: 401 without a key, 403 with the chat key on admin routes; keys never
appear in traces, responses or logs; no key means loopback only."""

from __future__ import annotations

import logging
import subprocess
import sys

import openai
import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from agentmodes.server import ServerConfig, create_app
from server_support import ROOT, live_server, make_service, stream_ws

ADMIN, CHAT = "admin-key-Zq81", "chat-key-Xy42"


@pytest.fixture
def client(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig(admin_key=ADMIN, chat_key=CHAT))) as c:
        yield c
    service.close()


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def test_missing_or_wrong_key_is_401(client):
    for headers in ({}, bearer("wrong"), {"Authorization": ADMIN}):
        reply = client.get("/api/chatbots", headers=headers)
        assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"
    assert client.post("/v1/chat/completions", json={
        "model": "default", "messages": [{"role": "user", "content": "hi"}]}).status_code == 401


def test_chat_key_can_chat_but_not_administer(client):
    assert client.get("/api/chatbots", headers=bearer(CHAT)).status_code == 200
    asked = client.post("/api/chat", json={"message": "Wann offen?"}, headers=bearer(CHAT))
    assert asked.status_code == 200
    for method, path, body in (("post", "/api/chatbots", {"name": "x"}),
                               ("patch", "/api/chatbots/default", {"description": "x"}),
                               ("delete", "/api/chatbots/default", None)):
        reply = client.request(method, path, json=body, headers=bearer(CHAT))
        assert reply.status_code == 403, (method, path)
    upload = client.post("/api/chatbots/default/documents", headers=bearer(CHAT),
                         files=[("files", ("a.md", b"# a"))])
    assert upload.status_code == 403
    conversation = asked.json()["conversation_id"]
    assert client.get(f"/api/conversations/{conversation}", headers=bearer(CHAT)).status_code == 200
    assert client.delete(f"/api/conversations/{conversation}",
                         headers=bearer(CHAT)).status_code == 403
    assert client.delete(f"/api/conversations/{conversation}",
                         headers=bearer(ADMIN)).status_code == 204


def test_admin_key_can_do_everything(client):
    assert client.post("/api/chatbots", json={"name": "x"}, headers=bearer(ADMIN)).status_code == 201
    assert client.post("/api/chat", json={"message": "Wann offen?"},
                       headers=bearer(ADMIN)).status_code == 200


def test_public_pages_need_no_key(client):
    assert client.get("/").status_code == 200
    assert client.get("/api/health").json()["auth"] is True


def test_websocket_needs_a_key_in_the_header_or_first_message(client):
    with client.websocket_connect("/api/ws") as ws:
        ws.send_json({"message": "Wann offen?"})
        assert ws.receive_json()["code"] == 401
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4401
    with client.websocket_connect("/api/ws") as ws:
        events = stream_ws(ws, {"message": "Wann offen?", "token": CHAT})
        assert events[-1]["done"]
        assert stream_ws(ws, {"message": "Und Samstag?"})[-1]["done"]   # once per socket
    with client.websocket_connect("/api/ws", headers=bearer(ADMIN)) as ws:
        assert stream_ws(ws, {"message": "Wann offen?"})[-1]["done"]


def test_keys_never_reach_traces_or_logs(tmp_path, caplog):
    service = make_service(tmp_path)
    with caplog.at_level(logging.DEBUG):
        with live_server(service, ServerConfig(admin_key=ADMIN, chat_key=CHAT)) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=CHAT, max_retries=0)
            client.chat.completions.create(model="default",
                                           messages=[{"role": "user", "content": "Wann offen?"}])
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=f"{url}/v1", api_key="bad-" + ADMIN,
                              max_retries=0).models.list()
    rows = service.store.engine.raw_connection()
    try:
        dump = "\n".join(str(r) for r in rows.execute("SELECT * FROM chatbot_messages"))
    finally:
        rows.close()
    assert "Wann offen?" in dump
    for key in (ADMIN, CHAT):
        assert key not in dump and key not in caplog.text
    service.close()


def _serve(*args, env=None):
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "serve", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)


def test_serve_refuses_a_public_host_without_a_key(tmp_path):
    import os
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENTMODES_API_KEY", "AGENTMODES_CHAT_API_KEY")}
    result = _serve("--host", "0.0.0.0", "--db", str(tmp_path / "c.db"), env=env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "refusing to listen on 0.0.0.0 without an API key" in result.stderr
    assert not (tmp_path / "c.db").exists()


def test_cors_is_off_unless_origins_are_configured(tmp_path):
    service = make_service(tmp_path)
    preflight = {"Origin": "https://example.org", "Access-Control-Request-Method": "POST"}
    with TestClient(create_app(service, ServerConfig())) as closed:
        reply = closed.options("/api/chat", headers=preflight)
        assert "access-control-allow-origin" not in reply.headers
    config = ServerConfig(cors_origins=["https://example.org"])
    with TestClient(create_app(service, config)) as open_:
        reply = open_.options("/api/chat", headers=preflight)
        assert reply.headers["access-control-allow-origin"] == "https://example.org"
        other = open_.options("/api/chat", headers={**preflight, "Origin": "https://evil.test"})
        assert "access-control-allow-origin" not in other.headers
    service.close()


def test_serve_reports_a_missing_kb_or_script_in_one_line(tmp_path):
    for args, message in ((["--kb", str(tmp_path / "none.db")], "does not exist"),
                          (["--llm", f"scripted:{tmp_path / 'none.json'}"], "not found")):
        result = _serve(*args, "--db", str(tmp_path / "c.db"))
        assert result.returncode == 2 and message in result.stderr
        assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
        assert not (tmp_path / "c.db").exists()
