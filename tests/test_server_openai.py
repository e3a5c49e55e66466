"""The official `openai` package as a real client of a live server on 127.0.0.1."""

from __future__ import annotations

import openai
import pytest

from server_support import ANSWER, live_server, make_service


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    service = make_service(tmp_path_factory.mktemp("openai"))
    with live_server(service) as url:
        yield service, openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    service.close()


def test_models_lists_the_chatbots(server):
    _, client = server
    assert [m.id for m in client.models.list()] == ["default"]


def test_non_streaming_completion_answers_and_stores_the_trace(server):
    service, client = server
    completion = client.chat.completions.create(
        model="default", messages=[{"role": "system", "content": "ignored"},
                                   {"role": "user", "content": "Wann hat die DG Agentur geöffnet?"}])
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    extra = completion.model_extra["agentmodes"]
    stored = service.store.get_message(extra["message_id"])
    assert stored.content == ANSWER and stored.agent_trace["actions"][0]["action"] == "rag_search"


def test_streaming_completion_delivers_the_answer_in_chunks(server):
    _, client = server
    stream = client.chat.completions.create(
        model="default", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Wann offen?"},
                  {"role": "assistant", "content": "Welche Stelle?"},
                  {"role": "user", "content": "Die DG Agentur."}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_unknown_model_is_a_not_found_error(server):
    _, client = server
    with pytest.raises(openai.NotFoundError, match="nope"):
        client.chat.completions.create(model="nope",
                                       messages=[{"role": "user", "content": "hi"}])


def test_last_message_must_be_from_the_user(server):
    _, client = server
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="default",
                                       messages=[{"role": "assistant", "content": "hi"}])
