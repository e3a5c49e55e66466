"""`POST /api/chatbots/{name}/compare`: one question in two or three modes as one stream of
lane-tagged frames; the lanes' figures add up with their events; parallel lanes interleave
when the model allows it; a client that leaves stops every lane; the chat scope guards it;
bad requests are 4xx; nothing is stored as a conversation."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from agentmodes.server import ServerConfig, create_app
from server_support import ANSWER, REFLACT_SCRIPT, SlowScriptedModel, live_server, make_service

CHAT_KEY, ADMIN_KEY = "chat-key-for-tests", "admin-key-for-tests"


class ParallelModel(SlowScriptedModel):
    """A slow scripted model that, like an HTTP backend, may serve runs side by side."""

    parallel_calls = True


def frames_of(reply) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in reply.iter_lines()
            if line.startswith("data: ")]


def compare(client, body, headers=None) -> tuple[int, list[dict]]:
    with client.stream("POST", "/api/chatbots/default/compare", json=body,
                       headers=headers or {}) as reply:
        if reply.status_code != 200:
            reply.read()
            return reply.status_code, [reply.json()]
        assert reply.headers["content-type"].startswith("text/event-stream")
        return 200, frames_of(reply)


def test_lanes_stream_each_modes_events_and_figures_that_add_up(tmp_path):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig())) as client:
        status, frames = compare(client, {"message": "Wann hat die DG Agentur geöffnet?",
                                          "modes": ["act", "react", "reflact"]})
    assert status == 200
    assert frames[-1] == {"compare_done": True, "lanes": ["act", "react", "reflact"]}
    for lane in ("act", "react", "reflact"):
        events = [f["event"] for f in frames if f.get("lane") == lane and "event" in f]
        [figures] = [f["figures"] for f in frames if f.get("lane") == lane and "figures" in f]
        done = events[-1]
        assert events[0]["status"] == "starting" and events[0]["mode"] == lane
        assert done["done"] and done["full_response"] == ANSWER
        assert figures["llm_calls"] == done["usage"]["calls"] == 2
        assert figures["prompt_tokens"] == done["usage"]["prompt_tokens"]
        assert sum(c["completion_tokens"] for c in figures["calls"]) + \
            figures["other_completion_tokens"] == done["usage"]["completion_tokens"]
        assert figures["iterations"] == done["iterations"] == 2
        assert figures["sources_cited"] == sum(s["cited"] for s in done["sources"]) == 1
    # Without parallel calls the lanes run one after another.
    order = [f["lane"] for f in frames if "lane" in f]
    assert order == sorted(order, key=["act", "react", "reflact"].index)
    assert service.list_conversations("default") == []       # nothing stored
    service.close()


def test_parallel_lanes_interleave_and_reflection_rides_on_each(tmp_path):
    script = REFLACT_SCRIPT + ['{"issues": [], "verdict": "pass"}']
    service = make_service(tmp_path, model_factory=lambda: ParallelModel(script, delay=0.01))
    with TestClient(create_app(service, ServerConfig())) as client:
        status, frames = compare(client, {"message": "Wann offen?", "modes": ["react", "reflact"],
                                          "reflect": 1})
    assert status == 200
    lanes = [f["lane"] for f in frames if "lane" in f]
    first_done = next(i for i, f in enumerate(frames) if f.get("event", {}).get("done"))
    assert {"react+reflection", "reflact+reflection"} <= set(lanes[:first_done])
    for lane in ("react+reflection", "reflact+reflection"):
        statuses = [f["event"].get("status") for f in frames
                    if f.get("lane") == lane and "event" in f]
        assert "critique" in statuses
        [figures] = [f["figures"] for f in frames if f.get("lane") == lane and "figures" in f]
        assert figures["llm_calls"] == 3 and figures["reflection_stop"] == "verdict"
        assert figures["calls"][-1]["kind"] == "critique"
    service.close()


def test_a_client_that_leaves_stops_every_lane(tmp_path):
    models: list[SlowScriptedModel] = []

    def factory():
        models.append(ParallelModel(REFLACT_SCRIPT, delay=0.05))
        return models[-1]

    service = make_service(tmp_path, model_factory=factory)
    with live_server(service) as url:
        with httpx.stream("POST", f"{url}/api/chatbots/default/compare", timeout=10,
                          json={"message": "Wann offen?", "modes": ["act", "reflact"]}) as reply:
            for line in reply.iter_lines():
                if "reflection_delta" in line:
                    break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(m.closed_early.is_set() for m in models):
            time.sleep(0.02)
    assert len(models) == 2 and all(m.closed_early.is_set() for m in models)
    service.close()


@pytest.mark.parametrize("body, code", [
    ({"message": "x", "modes": ["react"]}, 422),                  # one mode is no comparison
    ({"message": "x", "modes": ["act", "act"]}, 422),
    ({"message": "x", "modes": ["act", "cot"]}, 422),
    ({"message": "x", "modes": ["act", "react", "reflact", "plan-and-solve"]}, 422),
    ({"message": "", "modes": ["act", "react"]}, 422),
    ({"message": "x", "modes": ["act", "react"], "reflect": 9}, 422),
])
def test_bad_requests_are_refused(tmp_path, body, code):
    service = make_service(tmp_path)
    with TestClient(create_app(service, ServerConfig())) as client:
        assert compare(client, body)[0] == code
        reply = client.post("/api/chatbots/nobody/compare", json={"message": "x"})
        assert reply.status_code == 404
    service.close()


def test_compare_needs_a_chat_key_like_chat(tmp_path):
    service = make_service(tmp_path)
    config = ServerConfig(admin_key=ADMIN_KEY, chat_key=CHAT_KEY)
    with TestClient(create_app(service, config)) as client:
        body = {"message": "Wann offen?", "modes": ["act", "react"]}
        assert compare(client, body)[0] == 401
        assert compare(client, body, {"Authorization": "Bearer wrong"})[0] == 401
        status, frames = compare(client, body, {"Authorization": f"Bearer {CHAT_KEY}"})
        assert status == 200 and frames[-1]["compare_done"]
    service.close()
