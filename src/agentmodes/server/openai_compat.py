"""An OpenAI-compatible face: /v1/models lists the chatbots, /v1/chat/completions asks one,
/v1/embeddings embeds with a chatbot's knowledge-base embedder.

`model` names the chatbot; the last user message is the question and the earlier user and
assistant messages are its history (the client owns the conversation, as with OpenAI).
System messages are ignored: the chatbot's own prompts and settings apply. Every exchange
is still stored as a conversation with its trace; the response carries an extra
`agentmodes` object (conversation_id, message_id, mode, sources) that OpenAI clients ignore.

What is honoured, and what is refused (400, OpenAI's error shape) rather than ignored:
- The agent's trace comes as `reasoning_content` (streamed as deltas; in the message when
  not streaming), the answer as `content`; SSE comments keep a stream alive (openai_stream).
- `response_format` json_object / json_schema: the answer is written as JSON of that shape
  (structured_answer.py: a grammar on llama.cpp, the same field for OpenAI-compatible
  backends, checked against the schema either way).
- `n` > 1: refused (one agent run answers one request).
- `tools` / `functions` (unless `tool_choice` is "none"), a required or named `tool_choice`,
  `tool` messages: refused. The chatbot is an agent with its own tools (the knowledge-base
  search, respond, web search), run on the server; a client's functions would have to run
  on the client between the agent's steps, which a request/response exchange cannot do
  without suspending the server's run, and the embedded model has no native tool calls.
- `logprobs`, `top_logprobs`, audio output: refused (the answer is composed, not sampled
  token by token from one call).
- Sampling parameters (`temperature`, `top_p`, `max_tokens`, `seed`, `stop`, penalties) are
  accepted and do not apply: the chatbot's settings decide how its model generates.
"""

from __future__ import annotations

import base64
import time
import uuid
from datetime import datetime
from typing import Any, Literal, Optional, Union

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import AgentModesError
from ..service import AgentChatService
from ..store.chat import NotFoundError
from .auth import chat_rate, chat_scope, principal_of
from .openai_errors import error_body
from .openai_stream import KEEPALIVE, ReasoningText, keepalive_seconds, with_keepalive
from .schemas import StrictModel
from .streaming import events_of, open_stream, sse, sse_response

router = APIRouter(prefix="/v1", tags=["openai-compatible"], dependencies=[chat_scope])
MAX_EMBED_INPUTS = 2048


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: Any = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(StrictModel):
    # Unknown fields are accepted (clients add their own); the known unsupported ones are
    # refused in `unsupported`.
    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: Optional[StreamOptions] = None
    n: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    tools: Optional[list[Any]] = None
    tool_choice: Optional[Union[str, dict[str, Any]]] = None
    functions: Optional[list[Any]] = None
    logprobs: Optional[bool] = None
    top_logprobs: Optional[int] = None
    modalities: Optional[list[str]] = None
    audio: Optional[dict[str, Any]] = None
    # Accepted for compatibility; the chatbot's settings decide how it generates.
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    input: Union[str, list[str], list[int], list[list[int]]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Optional[int] = None
    # Not OpenAI's, but what E5-style embedders need (as Cohere's and NVIDIA's APIs name
    # it): "query" embeds a search query, "passage" (default) a text to be found.
    input_type: Literal["query", "passage"] = "passage"


def _text(content: Any) -> str:
    if isinstance(content, list):    # [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _error(status: int, message: str, kind: str | None = None,
           param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, param, kind), status)


def unsupported(body: CompletionRequest) -> Optional[tuple[str, str]]:
    """(parameter, reason) for the first thing asked that this endpoint does not do."""
    if body.n not in (None, 1):
        return "n", "n > 1 is not supported: one agent run answers one request"
    wants_tools = bool(body.tools or body.functions) and body.tool_choice != "none"
    if wants_tools or (body.tool_choice not in (None, "none", "auto")):
        return ("tools", "client-supplied tools are not supported: the chatbot is an agent "
                         "that runs its own tools on the server (see /v1/models); send "
                         "tool_choice \"none\" or leave tools out")
    if any(m.role in ("tool", "function") or (m.model_extra or {}).get("tool_calls")
           for m in body.messages):
        return "messages", "tool messages are not supported (this endpoint takes no tools)"
    if body.logprobs or body.top_logprobs:
        return "logprobs", "logprobs are not available: the answer is composed by an agent"
    if body.audio or (body.modalities and body.modalities != ["text"]):
        return "modalities", "only text output is supported"
    kind = (body.response_format or {}).get("type", "text")
    if kind not in ("text", "json_object", "json_schema"):
        return "response_format", f"response_format type {kind!r} is not supported"
    return None


def _model_json(bot: Any) -> dict[str, Any]:
    created = int(datetime.fromisoformat(bot.created_at).timestamp()) if bot.created_at else 0
    return {"id": bot.name, "object": "model", "owned_by": "agentmodes", "created": created,
            "description": bot.description}


@router.get("/models")
def models(request: Request) -> dict:
    service: AgentChatService = request.app.state.service
    return {"object": "list", "data": [_model_json(b) for b in service.list_chatbots()]}


@router.get("/models/{model_id}")
def model(model_id: str, request: Request):
    service: AgentChatService = request.app.state.service
    try:
        return _model_json(service.get_chatbot(model_id))
    except NotFoundError:
        return _not_found(model_id)


def _not_found(model_id: str) -> JSONResponse:
    return _error(404, f"the model {model_id!r} does not exist (it names a chatbot; see "
                       "/v1/models)", "not_found_error", "model")


@router.post("/chat/completions", dependencies=[chat_rate])
async def chat_completions(body: CompletionRequest, request: Request):
    service: AgentChatService = request.app.state.service
    refused = unsupported(body)
    if refused:
        return _error(400, refused[1], param=refused[0])
    turns = [{"role": m.role, "content": _text(m.content)} for m in body.messages
             if m.role in ("user", "assistant")]
    if not turns or turns[-1]["role"] != "user" or not turns[-1]["content"].strip():
        return _error(400, "the last message must be a non-empty user message", param="messages")
    query, history = turns[-1]["content"], turns[:-1]
    structured = body.response_format if (body.response_format or {}).get("type", "text") \
        != "text" else None
    try:
        user = principal_of(request)
        gen = await open_stream(request, lambda: service.stream(
            body.model, query, history=history, response_format=structured, user=user))
    except NotFoundError:
        return _not_found(body.model)
    except AgentModesError as err:
        return _error(400, str(err))
    reply = _Reply(body.model, structured is not None)
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return sse_response(reply.chunks(gen, include_usage))
    return await reply.whole(gen)


class _Reply:
    """One completion: its id, and the events of its run as OpenAI's two response forms."""

    def __init__(self, model: str, structured: bool):
        self.model = model
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        # With a response_format the prose answer is a draft: it goes to the reasoning, and
        # the content is the JSON of the done event.
        self.structured = structured
        self.reasoning = ReasoningText()

    def _chunk(self, delta: dict, finish: Optional[str] = None, **extra: Any) -> str:
        return sse({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                    "model": self.model, "choices": [{"index": 0, "delta": delta,
                                                      "finish_reason": finish}], **extra})

    def _answer_delta(self, event: dict) -> dict:
        text = str(event["delta"])
        if self.structured:
            # (a pseudo-event: the draft's tokens, labelled in the reasoning)
            return {"reasoning_content": self.reasoning.feed(
                {"status": "answer_delta", "delta": text})}
        return {"content": text}

    async def chunks(self, gen, include_usage: bool):
        yield self._chunk({"role": "assistant", "content": ""})
        streamed = False
        async with events_of(gen) as events:
            async for event in with_keepalive(events, keepalive_seconds()):
                if event is None:
                    yield KEEPALIVE
                elif "delta" in event and "status" not in event:
                    delta = self._answer_delta(event)
                    streamed = streamed or "content" in delta
                    yield self._chunk(delta)
                elif event.get("status") == "error" and event.get("fatal"):
                    # The openai client raises APIError on an `error` object in the stream.
                    yield sse(error_body(500, event.get("message", "the run failed")))
                    return
                elif event.get("done"):
                    if not streamed and event.get("full_response"):
                        yield self._chunk({"content": str(event["full_response"])})
                    yield self._chunk({}, "stop", agentmodes=_extra(event))
                    if include_usage:
                        yield sse({"id": self.id, "object": "chat.completion.chunk",
                                   "created": self.created, "model": self.model,
                                   "choices": [], "usage": _usage(event.get("usage") or {})})
                elif piece := self.reasoning.feed(event):
                    yield self._chunk({"reasoning_content": piece})
        yield sse("[DONE]")

    async def whole(self, gen):
        done = None
        async with events_of(gen) as events:
            async for event in events:
                if event.get("done"):
                    done = event
                elif event.get("status") == "error" and event.get("fatal"):
                    return _error(500, event.get("message", "the run failed"))
                elif "delta" in event and "status" not in event:
                    if self.structured:
                        self._answer_delta(event)
                else:
                    self.reasoning.feed(event)
        if done is None:
            return _error(500, "the run ended without an answer")
        message = {"role": "assistant", "content": done.get("full_response", ""),
                   "reasoning_content": self.reasoning.text or None}
        return {"id": self.id, "object": "chat.completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "finish_reason": "stop", "message": message,
                             "logprobs": None}],
                "usage": _usage(done.get("usage") or {}), "agentmodes": _extra(done)}


def _extra(done: dict) -> dict:
    return {k: done.get(k) for k in ("conversation_id", "message_id", "mode", "sources", "goal")}


def _usage(usage: dict[str, int]) -> dict[str, int]:
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


@router.post("/embeddings")
def embeddings(body: EmbeddingRequest, request: Request):
    """Vectors from the embedder the chatbot's knowledge base was built with, so a client can
    search or cluster in the same vector space as the agent's semantic search."""
    service: AgentChatService = request.app.state.service
    texts = [body.input] if isinstance(body.input, str) else list(body.input)
    if not texts or not all(isinstance(t, str) for t in texts):
        return _error(400, "input must be a string or a list of strings (token arrays are "
                           "not supported: the embedder has its own tokenizer)", param="input")
    if len(texts) > MAX_EMBED_INPUTS:
        return _error(400, f"at most {MAX_EMBED_INPUTS} inputs per request", param="input")
    if not all(t.strip() for t in texts):
        return _error(400, "input must not contain empty strings", param="input")
    try:
        kb = service.knowledge(service.get_chatbot(body.model))
    except NotFoundError:
        return _not_found(body.model)
    if kb is None:
        return _error(400, f"chatbot {body.model!r} has no knowledge base", param="model")
    embedder = kb.embedder
    if body.dimensions not in (None, embedder.dim):
        return _error(400, f"this embedder has {embedder.dim} dimensions; it cannot give "
                           f"{body.dimensions}", param="dimensions")
    vectors = (np.stack([embedder.embed_query(t) for t in texts]) if body.input_type == "query"
               else embedder.embed_passages(texts))
    vectors = np.asarray(vectors, dtype=np.float32)
    return {"object": "list", "model": body.model,
            "data": [{"object": "embedding", "index": i,
                      "embedding": _encode(v, body.encoding_format)}
                     for i, v in enumerate(vectors)],
            # The embedder's tokenizer is internal; no token count is reported.
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
            "agentmodes": {"embedder": embedder.name, "dim": embedder.dim,
                           "input_type": body.input_type}}


def _encode(vector: np.ndarray, encoding: str) -> Any:
    if encoding == "base64":        # the openai client asks for this by default
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                  include_in_schema=False)
def unknown(path: str):
    return _error(404, f"unknown endpoint /v1/{path} (this server has /v1/models, "
                       "/v1/chat/completions and /v1/embeddings)", "not_found_error")
