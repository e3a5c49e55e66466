"""The official `openai` package as a real client of a live server on 127.0.0.1: answers,
the trace as reasoning_content, keep-alive while the agent works, structured output,
embeddings, and OpenAI's error shape for everything refused."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import openai
import pytest
from pydantic import BaseModel

from agentmodes.llm.scripted import ScriptedModel
from agentmodes.server import ServerConfig
from agentmodes.server.openai_stream import KEEPALIVE_ENV
from kb_fixtures import HashingEmbedder
from server_support import ANSWER, REFLACT_SCRIPT, live_server, make_service

HOURS = {"tage": "Montag bis Freitag", "von": 9, "bis": 18}
SCHEMA = {"type": "object", "properties": {"tage": {"type": "string"},
                                           "von": {"type": "integer"},
                                           "bis": {"type": "integer"}},
          "required": ["tage", "von", "bis"], "additionalProperties": False}


class Hours(BaseModel):
    tage: str
    von: int
    bis: int


class SlowToStart(ScriptedModel):
    """Each call is silent for `wait` seconds first, like a long prompt evaluation."""

    def __init__(self, replies, wait: float):
        super().__init__(replies)
        self.wait = wait

    def stream(self, messages, options=None):
        time.sleep(self.wait)
        yield from super().stream(messages, options)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # The third reply is what the structured-output pass gets after the two-step run.
    service = make_service(tmp_path_factory.mktemp("openai"),
                           script=REFLACT_SCRIPT + [json.dumps(HOURS, ensure_ascii=False)])
    with live_server(service) as url:
        yield service, openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0), url
    service.close()


def test_models_list_and_retrieve(server):
    _, client, _ = server
    assert [m.id for m in client.models.list()] == ["default"]
    assert client.models.retrieve("default").id == "default"
    with pytest.raises(openai.NotFoundError) as err:
        client.models.retrieve("nope")
    assert err.value.body["type"] == "not_found_error" and "nope" in err.value.body["message"]


def test_non_streaming_completion_answers_with_the_trace_as_reasoning(server):
    service, client, _ = server
    completion = client.chat.completions.create(
        model="default", messages=[{"role": "system", "content": "ignored"},
                                   {"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}])
    message = completion.choices[0].message
    assert message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    reasoning = message.model_extra["reasoning_content"]
    assert "Reflection: Ich weiß noch nichts über die Öffnungszeiten." in reasoning
    assert 'Action: rag_search("Öffnungszeiten DG Agentur")' in reasoning
    assert "Observation: [1] Kontakt" in reasoning and "Iteration 2" in reasoning
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    extra = completion.model_extra["agentmodes"]
    stored = service.store.get_message(extra["message_id"])
    assert stored.content == ANSWER and stored.agent_trace["actions"][0]["action"] == "rag_search"


def test_streaming_sends_reasoning_deltas_before_the_answer(server):
    _, client, _ = server
    stream = client.chat.completions.create(
        model="default", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Wann offen?"},
                  {"role": "assistant", "content": "Welche Stelle?"},
                  {"role": "user", "content": "Die DG Agentur."}])
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = [(d.model_extra or {}).get("reasoning_content") for d in deltas]
    text = "".join(d.content or "" for d in deltas)
    assert text == ANSWER
    thinking = "".join(r for r in reasoning if r)
    assert thinking.startswith("Iteration 1\nReflection: Ich weiß")
    assert 'Action: rag_search("Öffnungszeiten DG Agentur")' in thinking
    # The trace streams token by token, and all of it before the first answer token.
    assert sum(1 for r in reasoning if r) > 10
    first_answer = next(i for i, d in enumerate(deltas) if d.content)
    assert all(not r for r in reasoning[first_answer:])
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_keep_alive_comments_keep_a_slow_run_within_the_client_read_timeout(tmp_path,
                                                                           monkeypatch):
    service = make_service(tmp_path, model_factory=lambda: SlowToStart(REFLACT_SCRIPT, 1.2))
    with live_server(service) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0,
                               timeout=httpx.Timeout(10.0, read=0.8))
        ask = dict(model="default", stream=True,
                   messages=[{"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}])
        monkeypatch.setenv(KEEPALIVE_ENV, "60")       # as good as none: the read times out
        with pytest.raises(openai.APITimeoutError):
            list(client.chat.completions.create(**ask))
        monkeypatch.setenv(KEEPALIVE_ENV, "0.25")
        text = "".join(c.choices[0].delta.content or "" for c in
                       client.chat.completions.create(**ask) if c.choices)
        assert text == ANSWER
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=ask, timeout=10) as raw:
            lines = list(raw.iter_lines())
        assert ": keep-alive" in lines and lines[-1] in ("data: [DONE]", "")
    service.close()


def test_response_format_json_schema_is_honoured(server):
    service, client, _ = server
    question = [{"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}]
    completion = client.chat.completions.parse(model="default", messages=question,
                                               response_format=Hours)
    assert completion.choices[0].message.parsed == Hours(**HOURS)
    stored = service.store.get_message(completion.model_extra["agentmodes"]["message_id"])
    assert json.loads(stored.content) == HOURS
    # The prose answer is the draft, shown as reasoning; the content is only the JSON.
    stream = client.chat.completions.create(
        model="default", messages=question, stream=True,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "hours", "schema": SCHEMA, "strict": True}})
    deltas = [c.choices[0].delta for c in stream if c.choices]
    assert json.loads("".join(d.content or "" for d in deltas)) == HOURS
    assert "Draft answer: " + ANSWER in "".join(
        (d.model_extra or {}).get("reasoning_content") or "" for d in deltas)


def test_a_reply_that_does_not_match_the_schema_is_an_error_not_text(tmp_path):
    service = make_service(tmp_path, script=REFLACT_SCRIPT + ['{"tage": "Montag"}'])
    with live_server(service) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="does not match the schema"):
            client.chat.completions.parse(
                model="default", response_format=Hours,
                messages=[{"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}])
        with pytest.raises(openai.BadRequestError, match="schema is invalid"):
            client.chat.completions.create(
                model="default", messages=[{"role": "user", "content": "Wann?"}],
                response_format={"type": "json_schema", "json_schema": {
                    "name": "x", "schema": {"type": "object", "required": "tage"}}})
    service.close()


@pytest.mark.parametrize("extra, param", [
    ({"n": 2}, "n"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, "tools"),
    ({"tool_choice": "required"}, "tools"),
    ({"logprobs": True}, "logprobs"),
    ({"response_format": {"type": "grammar"}}, "response_format"),
])
def test_what_is_not_supported_is_refused_with_openais_error(server, extra, param):
    _, client, _ = server
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="default", **extra,
                                       messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 400
    assert err.value.body["param"] == param and err.value.body["type"] == "invalid_request_error"


def test_tools_with_tool_choice_none_are_accepted_and_not_used(server):
    _, client, _ = server
    completion = client.chat.completions.create(
        model="default", tool_choice="none",
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        messages=[{"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}])
    assert completion.choices[0].message.content == ANSWER


def test_every_error_under_v1_has_openais_shape(server, tmp_path):
    _, client, url = server
    with pytest.raises(openai.NotFoundError, match="nope"):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="default",
                                       messages=[{"role": "assistant", "content": "hi"}])
    missing = httpx.post(f"{url}/v1/chat/completions", json={"model": "default"})
    assert missing.status_code == 422
    assert missing.json()["error"]["param"] == "messages" and "detail" not in missing.json()
    broken = httpx.post(f"{url}/v1/chat/completions", content=b"{not json",
                        headers={"Content-Type": "application/json"})
    assert broken.status_code == 422 and broken.json()["error"]["type"] == "invalid_request_error"
    unknown = httpx.get(f"{url}/v1/assistants")
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "not_found_error"
    # The rest of the API keeps FastAPI's shape.
    assert "detail" in httpx.get(f"{url}/api/chatbots/nope").json()

    service = make_service(tmp_path)
    with live_server(service, ServerConfig(admin_key="a-1", chat_key="c-1")) as keyed:
        denied = httpx.get(f"{keyed}/v1/models")
        assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
        assert denied.json()["error"]["type"] == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{keyed}/v1", api_key="wrong", max_retries=0).models.list()
        ok = openai.OpenAI(base_url=f"{keyed}/v1", api_key="c-1", max_retries=0)
        assert [m.id for m in ok.models.list()] == ["default"]
    service.close()


def test_embeddings_use_the_knowledge_bases_embedder(server):
    service, client, _ = server
    texts = ["Öffnungszeiten der DG Agentur", "Telefonnummer"]
    reply = client.embeddings.create(model="default", input=texts)       # base64 on the wire
    vectors = np.array([d.embedding for d in reply.data], dtype=np.float32)
    expected = HashingEmbedder().embed_passages(texts)
    assert vectors.shape == expected.shape and np.allclose(vectors, expected, atol=1e-6)
    floats = client.embeddings.create(model="default", input="Telefonnummer",
                                      encoding_format="float")
    assert np.allclose(floats.data[0].embedding, expected[1], atol=1e-6)
    query = client.embeddings.create(model="default", input="Telefonnummer",
                                     extra_body={"input_type": "query"})
    assert np.allclose(query.data[0].embedding, HashingEmbedder().embed_query("Telefonnummer"),
                       atol=1e-6)
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        client.embeddings.create(model="default", input="x", dimensions=3)
    with pytest.raises(openai.BadRequestError, match="token arrays"):
        client.embeddings.create(model="default", input=[[1, 2, 3]])
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="nope", input="x")
