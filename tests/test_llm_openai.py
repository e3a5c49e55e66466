"""The OpenAI-compatible backend against a real llama.cpp server and a misbehaving one."""

from __future__ import annotations

import json
import re
import threading

import pytest
from llama_server_support import free_port as _free_port
from llama_server_support import llama_server as start_llama_server
from llm_fault_server import (FaultServer, finish_chunk, slow, sse, status, text_chunk,
                              tool_chunk, usage_chunk)

from agentmodes.errors import LLMError
from agentmodes.llm import GenerationOptions, ToolSpec, collect, step_grammar
from agentmodes.llm.openai_compat import OpenAICompatModel

MESSAGES = [{"role": "user", "content": "Name three colours."}]


# -- a real server: llama-cpp-python's OpenAI-compatible server with the default model ------

@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("llama_server")) as url:
        yield url


@pytest.fixture
def real_model(llama_server):
    model = OpenAICompatModel("smollm2", base_url=llama_server, api_key="", max_retries=0)
    yield model
    model.close()


@pytest.mark.llm
def test_real_server_streams_text_in_pieces_with_usage(real_model):
    chunks = list(real_model.stream(MESSAGES, GenerationOptions(max_tokens=12)))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 1, "the answer should arrive in several deltas"
    assert "".join(texts).strip()
    last = chunks[-1]
    assert last.usage is not None and last.finish_reason in {"length", "stop"}
    # llama-cpp-python's server streams no usage: completions are counted per chunk.
    assert last.usage.completion_tokens == len(texts)
    assert last.usage.prompt_tokens > 0 and last.usage.calls == 1


@pytest.mark.llm
def test_real_server_cuts_at_stop_sequence(real_model):
    free = collect(real_model.stream(MESSAGES, GenerationOptions(max_tokens=24))).text
    words = free.split()
    assert len(words) >= 4, free
    stop = words[2]
    stopped = collect(real_model.stream(MESSAGES, GenerationOptions(max_tokens=24,
                                                                   stop=[stop])))
    assert stopped.text == free[:free.index(stop)]
    assert stop not in stopped.text


@pytest.mark.llm
def test_real_server_enforces_forwarded_grammar(llama_server):
    model = OpenAICompatModel("smollm2", base_url=llama_server, forward_grammar=True,
                              max_retries=0)
    grammar = step_grammar("react", ["rag_search"])
    text = collect(model.stream(
        [{"role": "user", "content": "Who wrote Faust?"}],
        GenerationOptions(max_tokens=200, grammar=grammar))).text
    model.close()
    assert re.match(r'THOUGHT: [^\n]+\n(ACTION: rag_search\("[^"\n]+"\)|FINAL ANSWER: .+)',
                    text), text


@pytest.mark.llm
def test_closing_a_real_stream_midway_leaves_the_server_usable(real_model):
    stream = real_model.stream(MESSAGES, GenerationOptions(max_tokens=200))
    first = next(stream)
    assert first.text
    stream.close()
    again = collect(real_model.stream(MESSAGES, GenerationOptions(max_tokens=5)))
    assert again.text


# -- fault injection ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    srv = FaultServer()
    yield srv
    srv.close()


def _model(url: str, **kw) -> OpenAICompatModel:
    kw.setdefault("max_retries", 3)
    kw.setdefault("backoff_base", 0.001)
    model = OpenAICompatModel("test-model", base_url=url, api_key="sk-test", **kw)
    model.waits = []
    model._sleep = model.waits.append          # record the backoff instead of sleeping
    return model


GOOD = sse([text_chunk("Hello"), text_chunk(" world"), finish_chunk(), usage_chunk(11, 2, 4)])


def test_request_carries_streaming_usage_stop_tools_and_key(server):
    server.play(GOOD)
    tools = [ToolSpec("rag_search", "Search the documents")]
    result = collect(_model(server.url).stream(
        MESSAGES, GenerationOptions(stop=["OBSERVATION:", "a", "b", "c", "d"], max_tokens=7,
                                    tools=tools,
                                    grammar="root ::= \"x\"")))
    assert result.text == "Hello world"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens,
            result.usage.cached_tokens) == (11, 2, 4)
    body = server.requests[0]
    assert body["_path"] == "/v1/chat/completions" and body["_auth"] == "Bearer sk-test"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["stop"] == ["OBSERVATION:", "a", "b", "c"]         # OpenAI's limit is 4
    assert body["max_tokens"] == 7
    assert body["tools"][0]["function"]["name"] == "rag_search"
    assert "grammar" not in body          # only forwarded when enabled


def test_grammar_is_forwarded_when_enabled_by_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_GRAMMAR", "1")
    server.play(GOOD)
    model = _model(server.url)
    assert model.supports_grammar
    collect(model.stream(MESSAGES, GenerationOptions(grammar='root ::= "x"')))
    assert server.requests[0]["grammar"] == 'root ::= "x"'


def test_429_is_retried_after_the_time_retry_after_asks(server):
    server.play(status(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}), GOOD)
    model = _model(server.url)
    assert collect(model.stream(MESSAGES)).text == "Hello world"
    assert len(server.requests) == 2
    assert model.waits == [2.0]


def test_500_then_success_is_retried_with_backoff(server):
    server.play(status(500, "boom"), status(502, "bad gateway"), GOOD)
    model = _model(server.url, backoff_base=0.1)
    assert collect(model.stream(MESSAGES)).text == "Hello world"
    assert len(server.requests) == 3
    assert len(model.waits) == 2
    # exponential with jitter: 0.05-0.1 s, then 0.1-0.2 s
    assert 0.05 <= model.waits[0] <= 0.1 and 0.1 <= model.waits[1] <= 0.2


def test_persistent_5xx_gives_one_clear_line_after_bounded_tries(server):
    server.play(status(503, {"error": {"message": "model is loading"}}))
    model = _model(server.url, max_retries=2)
    with pytest.raises(LLMError) as err:
        collect(model.stream(MESSAGES))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"LLM server at {server.url} unreachable after 3 tries")
    assert "HTTP 503" in message and "model is loading" in message
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server):
    server.play(status(401, {"error": {"message": "Incorrect API key"}}))
    with pytest.raises(LLMError, match=r"rejected the request \(HTTP 401\): Incorrect API key"):
        collect(_model(server.url).stream(MESSAGES))
    assert len(server.requests) == 1


def test_a_server_that_answers_too_slowly_times_out_and_is_retried(server):
    server.play(slow(1.5, GOOD))
    model = _model(server.url, timeout=0.3, max_retries=1)
    with pytest.raises(LLMError, match="unreachable after 2 tries: no response in time"):
        collect(model.stream(MESSAGES))
    assert len(server.requests) == 2


def test_unreachable_server_is_one_clear_line():
    port = _free_port()      # nothing listens there
    model = _model(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(LLMError) as err:
        collect(model.stream(MESSAGES))
    assert str(err.value).startswith(f"LLM server at http://127.0.0.1:{port}/v1 unreachable "
                                     "after 2 tries: connection refused")
    assert "\n" not in str(err.value)


def test_stream_cut_off_after_text_is_an_error_not_a_retry(server):
    server.play(sse([text_chunk("Hel"), text_chunk("lo"), text_chunk("!")], cut_after=2))
    received = []
    with pytest.raises(LLMError, match="cut off after 2 chunks") as err:
        for chunk in _model(server.url).stream(MESSAGES):
            received.append(chunk.text)
    assert received == ["Hel", "lo"]       # what arrived was delivered, nothing duplicated
    assert len(server.requests) == 1
    assert "\n" not in str(err.value)


def test_stream_cut_off_before_any_text_is_retried(server):
    server.play(sse([text_chunk("lost")], cut_after=0), GOOD)
    assert collect(_model(server.url).stream(MESSAGES)).text == "Hello world"
    assert len(server.requests) == 2


def test_stream_ending_without_done_or_finish_is_cut_off(server):
    server.play(sse([text_chunk("partial")], done=False))
    with pytest.raises(LLMError, match="cut off after 1 chunks"):
        collect(_model(server.url, max_retries=0).stream(MESSAGES))


def test_native_tool_call_deltas_assemble(server):
    server.play(sse([
        tool_chunk(0, id="call_a", name="rag_search", arguments=""),
        tool_chunk(0, arguments='{"que'),
        tool_chunk(0, arguments='ry": "Öffnungszeiten"}'),
        tool_chunk(1, id="call_b", name="lexical_search", arguments='{"query": "Impressum"}'),
        finish_chunk("tool_calls"), usage_chunk(30, 12)]))
    model = _model(server.url)
    chunks = list(model.stream(MESSAGES, GenerationOptions(
        tools=[ToolSpec("rag_search", "semantic"), ToolSpec("lexical_search", "keyword")])))
    assert sum(1 for c in chunks if c.tool_calls) == 4      # streamed as deltas
    result = collect(chunks)
    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_a", "rag_search"),
                                                           ("call_b", "lexical_search")]
    assert json.loads(result.tool_calls[0].arguments) == {"query": "Öffnungszeiten"}
    assert json.loads(result.tool_calls[1].arguments) == {"query": "Impressum"}


def test_closing_the_generator_closes_the_http_response(server):
    disconnected = threading.Event()
    server.play(sse([text_chunk(f"t{i} ") for i in range(400)], delay=0.02,
                    on_disconnect=disconnected))
    stream = _model(server.url).stream(MESSAGES)
    assert next(stream).text == "t0 "
    stream.close()
    assert disconnected.wait(15), "the server kept streaming to a closed client"


def test_error_event_inside_the_stream_is_reported(server):
    server.play(sse([text_chunk("a"), {"error": {"message": "context length exceeded"}}]))
    with pytest.raises(LLMError, match="error mid-stream: .*context length exceeded"):
        collect(_model(server.url).stream(MESSAGES))


def test_a_server_that_ignores_stream_true_is_understood(server):
    server.play(status(200, {"object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "rag_search", "arguments": "{\"query\": \"Impressum\"}"}}]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9}}))
    result = collect(_model(server.url).stream(MESSAGES))
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("rag_search", '{"query": "Impressum"}')]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (40, 9)
    assert result.finish_reason == "tool_calls"
