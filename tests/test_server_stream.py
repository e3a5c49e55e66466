"""WebSocket and SSE streaming of the seed events, and cancellation mid-answer."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from agentmodes.server import ServerConfig, create_app
from server_support import (ANSWER, REFLACT_SCRIPT, SlowScriptedModel, live_server,
                            make_service, stream_ws)


@pytest.fixture
def service(tmp_path):
    svc = make_service(tmp_path)
    yield svc
    svc.close()


def _statuses(events):
    return [e.get("status") for e in events if e.get("status")]


def test_websocket_streams_seed_events_and_persists_each_answer(service):
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.websocket_connect("/api/ws") as ws:
            events = stream_ws(ws, {"message": "Wann hat die DG Agentur geöffnet?"})
            done = events[-1]
            statuses = _statuses(events)
            # The seed's ReflAct vocabulary, in order.
            for name in ("starting", "iteration", "reflecting", "reflection_delta", "reflection",
                         "action", "observation", "final_answer"):
                assert name in statuses, name
            assert statuses.index("reflection") < statuses.index("action") \
                < statuses.index("observation") < statuses.index("final_answer")
            assert any("delta" in e and "status" not in e for e in events)
            assert done["done"] and done["full_response"] == ANSWER
            assert done["goal"] and done["sources"]
            # A follow-up on the same socket continues the conversation.
            second = stream_ws(ws, {"message": "Und am Samstag?",
                                    "conversation_id": done["conversation_id"]})
            assert second[-1]["conversation_id"] == done["conversation_id"]
        stored = client.get(f"/api/conversations/{done['conversation_id']}").json()["messages"]
    assert [(m["role"], m["status"]) for m in stored] == [
        ("user", "complete"), ("assistant", "complete")] * 2
    assert stored[1]["id"] == done["message_id"]


def test_websocket_rejects_bad_requests_and_keeps_the_connection(service):
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.websocket_connect("/api/ws") as ws:
            ws.send_text("not json")
            assert ws.receive_json()["code"] == 422
            bad = stream_ws(ws, {"chatbot": "nope", "message": "hi"})
            assert bad[-1]["fatal"] and "nope" in bad[-1]["message"]
            good = stream_ws(ws, {"message": "Wann offen?"})
            assert good[-1]["done"]


def test_sse_endpoint_streams_the_same_events(service):
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.stream("POST", "/api/chat/stream",
                           json={"message": "Wann offen?", "mode": "react"}) as reply:
            assert reply.headers["content-type"].startswith("text/event-stream")
            events = [json.loads(line[len("data: "):]) for line in reply.iter_lines()
                      if line.startswith("data: ")]
    assert events[0] == {"status": "starting", "mode": "react", "goal": "Wann offen?"}
    assert "thought" in _statuses(events) and events[-1]["done"]
    assert events[-1]["mode"] == "react"


def _slow_service(tmp_path):
    models: list[SlowScriptedModel] = []

    def factory():
        models.append(SlowScriptedModel(REFLACT_SCRIPT, delay=0.05))
        return models[-1]

    return make_service(tmp_path, model_factory=factory), models


def _assistant_messages(service):
    """Finished answers (a run's row is `running` until it ends)."""
    convs = service.list_conversations("default")
    return [m for c in convs for m in service.messages(c.id)
            if m.role == "assistant" and m.status != "running"]


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_cancel_message_stops_the_run_and_stores_the_partial_answer(tmp_path):
    service, models = _slow_service(tmp_path)
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.websocket_connect("/api/ws") as ws:
            ws.send_json({"message": "Wann hat die DG Agentur geöffnet?"})
            seen = []
            while "reflection_delta" not in _statuses(seen):
                seen.append(ws.receive_json())
            ws.send_json({"type": "cancel"})
            while not seen[-1].get("cancelled"):
                seen.append(ws.receive_json())
                assert not seen[-1].get("done"), "the run finished despite the cancel"
            # The socket stays usable after a cancel.
            assert ws is not None
    assert models[0].closed_early.is_set()          # the LLM request was closed
    assert models[0].finished_calls == 0
    [message] = _assistant_messages(service)
    assert message.status == "cancelled"
    assert message.agent_trace["mode"] == "reflact"
    service.close()


def test_client_disconnect_cancels_the_run_on_a_live_server(tmp_path):
    from websockets.sync.client import connect

    service, models = _slow_service(tmp_path)
    with live_server(service) as url:
        with connect(url.replace("http", "ws") + "/api/ws") as ws:
            ws.send(json.dumps({"message": "Wann hat die DG Agentur geöffnet?"}))
            while json.loads(ws.recv()).get("status") != "reflection_delta":
                pass
        # Socket closed mid-answer: the server notices, closes the model stream, stores.
        assert _wait_for(lambda: _assistant_messages(service))
        [message] = _assistant_messages(service)
    assert message.status == "cancelled"
    assert models[0].closed_early.is_set() and models[0].finished_calls == 0
    service.close()


def test_sse_client_disconnect_cancels_the_run(tmp_path):
    service, models = _slow_service(tmp_path)
    with live_server(service) as url:
        with httpx.stream("POST", f"{url}/api/chat/stream", json={"message": "Wann offen?"},
                          timeout=10) as reply:
            for line in reply.iter_lines():
                if "reflection_delta" in line:
                    break
        assert _wait_for(lambda: _assistant_messages(service))
    [message] = _assistant_messages(service)
    assert message.status == "cancelled"
    assert models[0].closed_early.is_set()
    service.close()


def test_reflection_pass_refines_the_answer_and_is_stored(tmp_path):
    refined = "Montag bis Freitag 9 bis 18 Uhr, samstags nach Vereinbarung [1]."
    script = REFLACT_SCRIPT + ['{"issues": ["Der Samstag fehlt."], "verdict": "revise"}',
                               refined]
    service = make_service(tmp_path, script=script)
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.websocket_connect("/api/ws") as ws:
            events = stream_ws(ws, {"message": "Wann hat die DG Agentur geöffnet?",
                                    "reflect": 1})
        critique = next(e for e in events if e.get("status") == "critique")
        assert critique["round"] == 1 and critique["verdict"] == "revise"
        assert "Samstag fehlt" in critique["content"]
        assert any(e.get("status") == "refinement" for e in events)
        done = events[-1]
        assert done["full_response"] == refined
        assert done["reflection"].pop("elapsed_s") >= 0      # the pass's own time
        assert done["reflection"] == {"rounds": 1, "stop_reason": "max_iterations",
                                      "draft": ANSWER}
        assert done["usage"]["calls"] == 4          # two agent steps, critique, refinement
        message = service.store.get_message(done["message_id"])
        assert message.content == refined and message.usage["calls"] == 4
        assert "critique" in [e["status"] for e in message.agent_trace["events"]]
        assert message.agent_trace["iterations"] == 2          # the mode's, not the review's
        too_many = client.post("/api/chat", json={"message": "x", "reflect": 9})
        assert too_many.status_code == 422
    service.close()


def test_a_failing_model_ends_with_an_error_event_and_an_error_message(tmp_path):
    from agentmodes.llm.scripted import ScriptedModel

    service = make_service(tmp_path, model_factory=lambda: ScriptedModel([]))
    with TestClient(create_app(service, ServerConfig())) as client:
        with client.websocket_connect("/api/ws") as ws:
            events = stream_ws(ws, {"message": "Wann offen?"})
            assert events[-1]["fatal"] and "no reply left" in events[-1]["message"]
            # The socket and the service go on.
            assert stream_ws(ws, {"message": "Noch einmal?"})[-1]["fatal"]
        reply = client.post("/v1/chat/completions", json={
            "model": "default", "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 500 and "no reply left" in reply.json()["error"]["message"]
    stored = _assistant_messages(service)
    assert len(stored) == 3 and {m.status for m in stored} == {"error"}
    assert all("no reply left" in m.error for m in stored)
    service.close()
