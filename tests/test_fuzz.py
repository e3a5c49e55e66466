"""Fuzzing (issue 11): the step parser and the request schemas never raise on any input.

The step parser reads whatever a model writes, and the server reads whatever a client
sends; both are property-tested with hypothesis over thousands of generated inputs: model
replies built from the labels, call syntaxes and markers the parser knows, mixed with
arbitrary text; and request bodies built from the schemas' own fields with values of every
JSON type. A reply must parse to a Step (an unreadable one carries an error value); a
body must be answered with a status below 500.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmodes.parsing import SectionRouter, Step, parse_step
from agentmodes.server import ServerConfig, create_app
from agentmodes.settings import ChatbotSettings
from server_support import make_service

LABELS = ["Thought", "THOUGHT", "Thought 2", "REFLECTION", "Reflection:", "ACTION", "Action 3",
          "**Action**", "FINAL ANSWER", "Final Answer", "Answer", "GOAL", "OBSERVATION",
          "Observation 1", "final_answer"]
CALLS = ['rag_search("{}")', "rag_search({})", "Search[{}]", "Lookup[{}]", "Finish[{}]",
         '{{"name": "rag_search", "arguments": {{"query": "{}"}}}}', "respond({})",
         '[TOOL_CALLS][{{"name": "lexical_search", "arguments": {{"query": "{}"}}}}]',
         "<tool_call>{}</tool_call>", '<|python_tag|>web_search("{}")', "web_search[{}",
         'rag_search("{}', "{}("]
# Any code point, and lone surrogates often (JSON can carry them as escapes, "\\ud800";
# drawn uniformly they would almost never come up).
CHARS = st.characters(exclude_categories=())
SURROGATES = st.characters(categories=["Cs"])
TEXT = st.text(st.one_of(CHARS, CHARS, CHARS, SURROGATES), max_size=60)
NOISE = st.sampled_from(["", "\n", " ", ":", "[", "]", "(", ")", '"', "'", "```", "**", "\\",
                         "\u200b", "\x00", "ß", "你好", "\r\n", "{", "}"])


@st.composite
def model_replies(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            parts.append(f"{draw(st.sampled_from(LABELS))}{draw(st.sampled_from([':', '', ' :']))} "
                         f"{draw(TEXT)}")
        elif kind == 1:
            parts.append(draw(st.sampled_from(CALLS)).format(draw(TEXT)))
        elif kind == 2:
            parts.append(draw(NOISE))
        else:
            parts.append(draw(TEXT))
    return draw(st.sampled_from(["\n", " ", "", "\n\n"])).join(parts)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=model_replies(), reflact=st.booleans(),
       tools=st.sampled_from([None, ["rag_search", "respond"], ["Search", "python"]]))
def test_the_step_parser_never_raises(reply, reflact, tools):
    step = parse_step(reply, reflact=reflact, tools=tools)
    assert isinstance(step, Step)
    assert step.error is not None or step.final_answer is not None or step.action is not None \
        or step.reasoning is not None


@settings(max_examples=1000, deadline=None)
@given(reply=model_replies(), cuts=st.lists(st.integers(1, 40), max_size=8))
def test_the_streaming_router_never_raises(reply, cuts):
    router = SectionRouter()
    pos = 0
    for size in cuts:
        router.feed(reply[pos:pos + size])
        pos += size
    pieces = router.feed(reply[pos:], final=True)
    assert all(isinstance(piece, tuple) and len(piece) == 2 for piece in pieces)


ANY_TEXT = st.text(st.one_of(CHARS, CHARS, CHARS, SURROGATES), max_size=40)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12)
FIELDS = ["chatbot", "message", "conversation_id", "mode", "reflect", "token", "name",
          "description", "language", "settings", "title", "role", "model", "messages",
          "stream", "agent_mode", "task_type"]
SETTINGS = st.dictionaries(st.sampled_from(sorted(ChatbotSettings.model_fields)), JSON_VALUES,
                          max_size=4)
# Shaped like the schemas (their own field names, any values), so that bodies get past the
# first check often enough to reach storage and rendering; and shapeless ones.
SHAPED = st.fixed_dictionaries({}, optional={
    **{name: JSON_VALUES for name in FIELDS}, "name": ANY_TEXT, "message": ANY_TEXT,
    "settings": SETTINGS | JSON_VALUES,
    "messages": st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                                "content": ANY_TEXT}), max_size=3)})
BODIES = SHAPED | st.dictionaries(st.sampled_from(FIELDS) | ANY_TEXT, JSON_VALUES,
                                  max_size=6) | JSON_VALUES
ROUTES = [("post", "/api/chat"), ("post", "/api/chat/stream"), ("post", "/api/chatbots"),
          ("patch", "/api/chatbots/default"), ("post", "/api/conversations"),
          ("post", "/api/users"), ("post", "/v1/chat/completions")]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    service = make_service(tmp_path_factory.mktemp("fuzz"))
    try:                        # thousands of requests from one key: no rate limit here
        from agentmodes.server.admission import Rate
        config = ServerConfig(rate_chat=Rate(0, 1.0))
    except ImportError:         # a version without rate limits
        config = ServerConfig()
    with TestClient(create_app(service, config), raise_server_exceptions=False) as c:
        yield c
    service.close()


@settings(max_examples=1500, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(route=st.sampled_from(ROUTES), body=BODIES)
def test_request_bodies_never_cause_a_server_error(client, route, body):
    method, path = route
    # json.dumps writes every non-ASCII character as an escape: lone surrogates get through.
    reply = client.request(method, path, content=json.dumps(body),
                           headers={"Content-Type": "application/json"})
    assert reply.status_code < 500, (path, body, reply.text[:300])
    assert client.get("/api/chatbots").status_code == 200     # nothing stored breaks it
    assert len(reply.content) < 100_000


@settings(max_examples=500, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(message=BODIES)
def test_websocket_messages_never_break_the_socket(client, message):
    with client.websocket_connect("/api/ws") as ws:
        ws.send_text(json.dumps(message))
        event = ws.receive_json()
        assert event.get("code", 200) < 500 and not str(event.get("message", "")).startswith(
            "internal error")
        if not (event.get("done") or event.get("fatal") or event.get("code")):
            while not (event.get("done") or event.get("fatal")):
                event = ws.receive_json()
