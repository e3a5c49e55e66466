"""Any OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama, LM Studio, llama.cpp.

Only the wire format everyone shares is used: POST {base}/chat/completions with
`stream: true`, Server-Sent Events of `chat.completion.chunk` objects, native tool calls as
`delta.tool_calls` fragments, and `stream_options.include_usage` for a final usage chunk.

Failures a user can do nothing about in the moment (429, 5xx, timeouts, refused or dropped
connections) are retried a bounded number of times with exponential backoff and jitter,
waiting at least what `Retry-After` asks. A request the server rejects (400, 401, 404) is not
retried. Once text has been handed to the caller a retry would duplicate it, so a stream cut
off mid-way is an LLMError; only a stream that failed before its first chunk is retried.

Usage comes from the server's final usage chunk. Servers that send none in streams
(llama-cpp-python's server ignores stream_options) get an estimate: completion tokens = the
number of content chunks (these servers send one token per chunk), prompt tokens = the
prompt's characters / 4.

Configuration (constructor arguments win over the environment):
- OPENAI_BASE_URL   default https://api.openai.com/v1
- OPENAI_API_KEY    sent as a Bearer token when set (local servers usually need none)
- OPENAI_TIMEOUT    seconds to wait for the next byte (default 120: a CPU server can take
                    long to read a long prompt before its first token)
- OPENAI_MAX_RETRIES  retries after the first try (default 4)
- OPENAI_GRAMMAR=1  forward GenerationOptions.grammar as the `grammar` request field, which
                    llama.cpp's server (and llama-cpp-python's) enforce as GBNF. Off by
                    default because other servers reject or ignore unknown fields.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterator, Optional

import httpx

from ..errors import ConfigError, LLMError
from ..events import Usage
from ..http_retry import RETRYABLE_STATUS, backoff_delay, parse_retry_after
from .base import ChatChunk, GenerationOptions, Message, ToolCallDelta

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_STOP_SEQUENCES = 4


class _StreamCut(Exception):
    """The server closed the event stream before saying it was done."""


class OpenAICompatModel:
    supports_tools = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None,
                 backoff_base: float = 0.5, backoff_max: float = 20.0,
                 max_retry_after: float = 60.0, forward_grammar: bool | None = None,
                 transport: httpx.BaseTransport | None = None):
        env = os.environ
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = (base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        api_key = api_key if api_key is not None else env.get("OPENAI_API_KEY")
        timeout = timeout if timeout is not None else _env_float("OPENAI_TIMEOUT", 120.0)
        self.max_retries = max_retries if max_retries is not None else int(
            _env_float("OPENAI_MAX_RETRIES", 4))
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        if forward_grammar is None:
            forward_grammar = env.get("OPENAI_GRAMMAR", "").lower() in {"1", "true", "yes", "on"}
        self.supports_grammar = forward_grammar
        self._sleep = time.sleep          # replaced by tests to observe the backoff
        headers = {"Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))

    # -- public -----------------------------------------------------------------------------

    def stream(self, messages: list[Message], options: GenerationOptions | None = None
               ) -> Iterator[ChatChunk]:
        """Stream one call. Closing the generator closes the HTTP response (cancels the run)."""
        body = self._request_body(messages, options or GenerationOptions())
        tries = self.max_retries + 1
        last_error = ""
        for attempt in range(1, tries + 1):
            yielded = 0
            wait: Optional[float] = None
            try:
                with self._client.stream("POST", "/chat/completions", json=body) as response:
                    if response.status_code >= 400:
                        last_error, wait = self._http_failure(response)
                    elif response.headers.get("content-type", "").startswith("application/json"):
                        # a server that ignores stream=true answers with one completion
                        yield from _whole_completion(response)
                        return
                    else:
                        for chunk in _parse_stream(response, _prompt_chars(messages)):
                            yielded += 1
                            yield chunk
                        return
            except (httpx.TimeoutException, httpx.TransportError, _StreamCut) as err:
                if yielded:
                    raise LLMError(f"LLM stream from {self.base_url} was cut off after "
                                   f"{yielded} chunks: {_describe(err)}") from None
                last_error = _describe(err)
            if attempt < tries:
                self._sleep(self._backoff(attempt, wait))
        raise LLMError(f"LLM server at {self.base_url} unreachable after {tries} tries: "
                       f"{last_error}")

    def close(self) -> None:
        self._client.close()

    # -- internals --------------------------------------------------------------------------

    def _request_body(self, messages: list[Message], options: GenerationOptions
                      ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": messages, "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": options.temperature,
        }
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.stop:
            # OpenAI rejects more than 4; the parser cuts any invented continuation anyway
            body["stop"] = list(options.stop)[:MAX_STOP_SEQUENCES]
        if options.tools:
            body["tools"] = [t.to_openai() for t in options.tools]
        if options.grammar and self.supports_grammar:
            body["grammar"] = options.grammar
        if options.response_format:
            body["response_format"] = options.response_format
        return body

    def _http_failure(self, response: httpx.Response) -> tuple[str, Optional[float]]:
        """Describe a failed response; raise at once when retrying cannot help."""
        response.read()
        detail = _error_detail(response)
        status = response.status_code
        if status not in RETRYABLE_STATUS:
            raise LLMError(f"LLM server at {self.base_url} rejected the request "
                           f"(HTTP {status}){': ' + detail if detail else ''}")
        return (f"HTTP {status}{': ' + detail if detail else ''}",
                parse_retry_after(response.headers.get("retry-after")))

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        return backoff_delay(attempt, retry_after, base=self.backoff_base,
                             cap=self.backoff_max, max_retry_after=self.max_retry_after)


def _parse_stream(response: httpx.Response, prompt_chars: int) -> Iterator[ChatChunk]:
    """Turn SSE `data:` events into ChatChunks; the last chunk carries usage and finish."""
    usage: Optional[Usage] = None
    chunks = 0
    finish: Optional[str] = None
    data: list[str] = []
    done = False
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
            continue
        if line or not data:        # other fields (event:, id:, comments) carry nothing we use
            continue
        payload, data = "\n".join(data), []
        if payload.strip() == "[DONE]":
            done = True
            break
        chunk, chunk_usage, chunk_finish = _decode_chunk(payload)
        usage = chunk_usage or usage
        finish = chunk_finish or finish
        if chunk is not None:
            chunks += 1
            yield chunk
    if data and "\n".join(data).strip() == "[DONE]":
        done = True
    if not done and finish is None:
        raise _StreamCut("the event stream ended before [DONE]")
    if usage is None:
        usage = Usage(prompt_tokens=prompt_chars // 4, completion_tokens=chunks, calls=1)
    yield ChatChunk(usage=usage, finish_reason=finish or "stop")


def _prompt_chars(messages: list[Message]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


def _whole_completion(response: httpx.Response) -> Iterator[ChatChunk]:
    response.read()
    try:
        obj = response.json()
        choice = obj["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"LLM server sent a response that is not a chat completion: "
                       f"{_one_line(response.text, 120)}") from None
    calls = _tool_deltas(message.get("tool_calls"))
    if message.get("content") or calls:
        yield ChatChunk(text=message.get("content") or "", tool_calls=calls or None)
    yield ChatChunk(usage=_usage(obj.get("usage")) or Usage(calls=1),
                    finish_reason=choice.get("finish_reason") or "stop")


def _decode_chunk(payload: str) -> tuple[Optional[ChatChunk], Optional[Usage], Optional[str]]:
    try:
        obj = json.loads(payload)
    except json.JSONDecodeError:
        raise LLMError(f"LLM server sent a stream event that is not JSON: {payload[:120]!r}")
    if isinstance(obj, dict) and obj.get("error"):
        raise LLMError(f"LLM server reported an error mid-stream: {_one_line(obj['error'])}")
    try:
        return _chunk_of(obj)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        # e.g. "choices": "not a list": one clear line, not an AttributeError from deep inside
        raise LLMError(f"LLM server sent a stream event that is not a chat completion "
                       f"chunk: {payload[:120]!r}") from None


def _chunk_of(obj: dict) -> tuple[Optional[ChatChunk], Optional[Usage], Optional[str]]:
    usage = _usage(obj.get("usage"))
    choices = obj.get("choices") or []
    if not choices:
        return None, usage, None
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise TypeError("choices is not a list of objects")
    choice = choices[0]
    delta = choice.get("delta") or {}
    text = delta.get("content") or ""
    if not isinstance(text, str):
        raise TypeError("delta.content is not text")
    tool_calls = _tool_deltas(delta.get("tool_calls")) or None
    finish = choice.get("finish_reason")
    if not text and not tool_calls:
        return None, usage, finish
    return ChatChunk(text=text, tool_calls=tool_calls), usage, finish


def _tool_deltas(raw: Any) -> list[ToolCallDelta]:
    """OpenAI tool_calls entries (whole or fragments) as ToolCallDeltas."""
    out = []
    for i, call in enumerate(raw or []):
        function = call.get("function") or {}
        out.append(ToolCallDelta(index=call.get("index", i), id=call.get("id"),
                                 name=function.get("name"),
                                 arguments=function.get("arguments") or ""))
    return out


def _usage(raw: Any) -> Optional[Usage]:
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details") or {}
    return Usage(prompt_tokens=int(raw.get("prompt_tokens") or 0),
                 completion_tokens=int(raw.get("completion_tokens") or 0),
                 cached_tokens=int(details.get("cached_tokens") or 0), calls=1)


def _error_detail(response: httpx.Response) -> str:
    try:
        obj = response.json()
    except ValueError:
        return _one_line(response.text)
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj))
        if isinstance(err, dict):
            err = err.get("message", err)
        return _one_line(err)
    return _one_line(obj)


def _describe(err: BaseException) -> str:
    kind = {httpx.ConnectError: "connection refused or failed",
            httpx.ConnectTimeout: "connect timed out",
            httpx.ReadTimeout: "no response in time (read timeout)",
            httpx.RemoteProtocolError: "connection closed mid-response"}.get(type(err))
    text = _one_line(err)
    return f"{kind} ({text})" if kind and text else kind or text or type(err).__name__


def _one_line(value: Any, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {os.environ.get(name)!r}") from None
