"""Issue 11, items 3 and 6, and rate limits: bounded work per client.

Replays: about 40 concurrent non-streaming chats against a slow model (health must still
answer, and the runs of clients that gave up must stop), a full run queue (429 with
Retry-After), questions beyond a key's rate, and WebSockets opened and held without
authenticating or left idle.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi.testclient import TestClient
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from agentmodes.server import ServerConfig, create_app
from server_support import REFLACT_SCRIPT, SlowScriptedModel, live_server, make_service, stream_ws

KEY = "chat-key-3"


class Models:
    """A factory of slow scripted models that remembers them (one per run)."""

    def __init__(self, delay: float):
        self.delay, self.made = delay, []
        self.lock = threading.Lock()

    def __call__(self):
        model = SlowScriptedModel(REFLACT_SCRIPT, delay=self.delay)
        with self.lock:
            self.made.append(model)
        return model


def _until(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _statuses(service):
    return [m.status for c in service.list_conversations(limit=500)
            for m in service.messages(c.id) if m.role == "assistant"]


def test_forty_slow_chats_leave_health_answering_and_stop_when_their_clients_leave(tmp_path):
    models = Models(delay=1.0)            # one reply takes longer than a client waits
    service = make_service(tmp_path, model_factory=models)
    with live_server(service) as url:     # the default pool: 8 at once, 64 waiting
        def chat(i):
            try:
                httpx.post(f"{url}/api/chat", json={"message": f"Frage {i}?"}, timeout=15)
            except httpx.TimeoutException:
                return "gave up"
            return "answered"

        with ThreadPoolExecutor(40) as clients:
            waiting = [clients.submit(chat, i) for i in range(40)]
            assert _until(lambda: len(models.made) >= 8)
            time.sleep(1.0)                 # the others arrive (and, before, took every thread)
            health = httpx.get(f"{url}/api/health", timeout=60)
            # It answered while all 40 were still waiting (before: only once they gave up).
            assert health.status_code == 200 and not any(w.done() for w in waiting)
            runs = health.json()["runs"]
            assert runs["running"] == 8 and runs["running"] + runs["waiting"] <= 40
            assert [w.result() for w in waiting] == ["gave up"] * 40
        # Every client gave up: the running answers stop, the waiting ones never start.
        assert _until(lambda: httpx.get(f"{url}/api/health").json()["runs"]["running"] == 0)
        assert _until(lambda: len(_statuses(service)) == len(models.made) and
                      all(s == "cancelled" for s in _statuses(service)))
        # Those that got a slot while the others were still giving up were cut short too:
        # no model call ran to its end.
        assert len(models.made) < 40
        assert all(m.finished_calls == 0 for m in models.made)
    service.close()


def test_a_full_queue_is_refused_with_retry_after(tmp_path):
    service = make_service(tmp_path, model_factory=Models(delay=0.2))
    with live_server(service, ServerConfig(run_workers=1, run_queue=1)) as url:
        def chat(_):
            return httpx.post(f"{url}/api/chat/stream", json={"message": "Wann offen?"},
                              timeout=60)

        with ThreadPoolExecutor(3) as clients:
            replies = list(clients.map(chat, range(3)))
    busy = [r for r in replies if r.status_code == 429]
    assert len(busy) == 1 and int(busy[0].headers["retry-after"]) >= 1
    assert "busy" in busy[0].json()["detail"]
    assert sorted(r.status_code for r in replies) == [200, 200, 429]
    service.close()


def test_rate_limits_are_per_key_on_chat_and_upload(tmp_path):
    from agentmodes.server.admission import Rate
    service = make_service(tmp_path)
    config = ServerConfig(admin_key="admin-1", chat_key=KEY, rate_chat=Rate(2, 60.0),
                          rate_upload=Rate(1, 60.0))
    with TestClient(create_app(service, config)) as client:
        chat = {"Authorization": f"Bearer {KEY}"}
        for _ in range(2):
            assert client.post("/api/chat", json={"message": "Wann offen?"},
                               headers=chat).status_code == 200
        limited = client.post("/api/chat", json={"message": "Wann offen?"}, headers=chat)
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert "rate limit" in limited.json()["detail"]
        stream = client.post("/api/chat/stream", json={"message": "x"}, headers=chat)
        assert stream.status_code == 429
        v1 = client.post("/v1/chat/completions", headers=chat, json={
            "model": "default", "messages": [{"role": "user", "content": "x"}]})
        assert v1.status_code == 429
        with client.websocket_connect("/api/ws", headers=chat) as ws:
            [event] = stream_ws(ws, {"message": "Wann offen?"})
            assert event["code"] == 429 and event["retry_after"] >= 1
        # Reading is not metered, and another key has a bucket of its own.
        assert client.get("/api/conversations", headers=chat).status_code == 200
        admin = {"Authorization": "Bearer admin-1"}
        assert client.post("/api/chat", json={"message": "Wann offen?"},
                           headers=admin).status_code == 200
        files = [("files", ("a.md", b"# A\n\nText.\n"))]
        assert client.post("/api/chatbots/default/documents", files=files,
                           headers=admin).status_code == 202
        assert client.post("/api/chatbots/default/documents", files=files,
                           headers=admin).status_code == 429
    service.close()


def test_rates_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("AGENTMODES_RATE_CHAT", "10/second")
    monkeypatch.setenv("AGENTMODES_RATE_UPLOAD", "off")
    config = ServerConfig.from_env()
    assert (config.rate_chat.count, config.rate_chat.period_s) == (10, 1.0)
    assert config.rate_upload.count == 0


@pytest.fixture
def keyed(tmp_path):
    service = make_service(tmp_path)
    config = ServerConfig(chat_key=KEY, ws_max_pending=3, ws_auth_timeout_s=1,
                          ws_idle_timeout_s=1)
    with live_server(service, config) as url:
        yield url.replace("http", "ws", 1) + "/api/ws"
    service.close()


def test_unauthenticated_websockets_are_capped_and_closed_at_their_deadline(keyed):
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(keyed)) for _ in range(3)]
        with pytest.raises(InvalidStatus):      # the fourth is refused at the handshake
            with connect(keyed, open_timeout=5):
                pass
        with connect(keyed, additional_headers={"Authorization": f"Bearer {KEY}"}):
            pass                                # a socket with a key is not "pending"
        for ws in held:                         # the deadline closes the silent ones
            event = json.loads(ws.recv(timeout=10))
            assert event["code"] == 408
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd.code == 4408
    with connect(keyed):                        # their places are free again
        pass


def test_an_idle_websocket_is_closed(keyed):
    with connect(keyed) as ws:
        ws.send(json.dumps({"message": "Wann offen?", "token": KEY}))
        while not json.loads(ws.recv(timeout=30)).get("done"):
            pass
        assert json.loads(ws.recv(timeout=10))["code"] == 408
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
