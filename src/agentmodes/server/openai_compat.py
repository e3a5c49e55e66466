"""An OpenAI-compatible face: /v1/models lists the chatbots, /v1/chat/completions asks one.

`model` names the chatbot; the last user message is the question and the earlier user and
assistant messages are its history (the client owns the conversation, as with OpenAI).
System messages are ignored: the chatbot's own prompts and settings apply. Every exchange
is still stored as a conversation with its trace; the response carries an extra
`agentmodes` object (conversation_id, message_id, mode, sources) that OpenAI clients ignore.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any, Optional

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from ..errors import AgentModesError
from ..service import AgentChatService
from ..store.chat import NotFoundError
from .auth import chat_rate, chat_scope, principal_of
from .schemas import StrictModel
from .streaming import events_of, open_stream, sse

router = APIRouter(prefix="/v1", tags=["openai-compatible"], dependencies=[chat_scope])


class ChatMessage(BaseModel):
    role: str
    content: Any = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(StrictModel):
    model: str
    messages: list[ChatMessage]
    stream: bool = False
    stream_options: Optional[StreamOptions] = None
    # Accepted for compatibility; the chatbot's settings decide how it generates.
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None


def _text(content: Any) -> str:
    if isinstance(content, list):    # [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)


def _usage(usage: dict[str, int]) -> dict[str, int]:
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


@router.get("/models")
def models(request: Request) -> dict:
    service: AgentChatService = request.app.state.service
    return {"object": "list", "data": [
        {"id": bot.name, "object": "model", "owned_by": "agentmodes",
         "created": int(datetime.fromisoformat(bot.created_at).timestamp())
         if bot.created_at else 0, "description": bot.description}
        for bot in service.list_chatbots()]}


@router.post("/chat/completions", dependencies=[chat_rate])
async def chat_completions(body: CompletionRequest, request: Request):
    service: AgentChatService = request.app.state.service
    turns = [{"role": m.role, "content": _text(m.content)} for m in body.messages
             if m.role in ("user", "assistant")]
    if not turns or turns[-1]["role"] != "user" or not turns[-1]["content"].strip():
        return _error(400, "the last message must be a non-empty user message")
    query, history = turns[-1]["content"], turns[:-1]
    try:
        user = principal_of(request)
        gen = await open_stream(request, lambda: service.stream(body.model, query,
                                                                history=history, user=user))
    except NotFoundError:
        return _error(404, f"the model {body.model!r} does not exist (it names a chatbot; "
                           "see /v1/models)", "not_found_error")
    except AgentModesError as err:
        return _error(400, str(err))
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(
            _chunks(gen, completion_id, created, body.model, include_usage),
            media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    done = None
    async with events_of(gen) as events:
        async for event in events:
            if event.get("done"):
                done = event
            elif event.get("status") == "error" and event.get("fatal"):
                return _error(500, event.get("message", "the run failed"), "server_error")
    if done is None:
        return _error(500, "the run ended without an answer", "server_error")
    return {
        "id": completion_id, "object": "chat.completion", "created": created,
        "model": body.model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": done.get("full_response", "")}}],
        "usage": _usage(done.get("usage") or {}),
        "agentmodes": _extra(done),
    }


def _extra(done: dict) -> dict:
    return {k: done.get(k) for k in ("conversation_id", "message_id", "mode", "sources", "goal")}


async def _chunks(gen, completion_id: str, created: int, model: str, include_usage: bool):
    def chunk(delta: dict, finish: Optional[str] = None, **extra: Any) -> str:
        return sse({"id": completion_id, "object": "chat.completion.chunk", "created": created,
                    "model": model, "choices": [{"index": 0, "delta": delta,
                                                 "finish_reason": finish}], **extra})

    yield chunk({"role": "assistant", "content": ""})
    streamed = False
    async with events_of(gen) as events:
        async for event in events:
            if "delta" in event and "status" not in event:
                streamed = True
                yield chunk({"content": str(event["delta"])})
            elif event.get("status") == "error" and event.get("fatal"):
                # The openai client raises APIError on an `error` object in the stream.
                yield sse({"error": {"message": event.get("message", "the run failed"),
                                     "type": "server_error"}})
                return
            elif event.get("done"):
                if not streamed and event.get("full_response"):
                    yield chunk({"content": str(event["full_response"])})
                yield chunk({}, "stop", agentmodes=_extra(event))
                if include_usage:
                    yield sse({"id": completion_id, "object": "chat.completion.chunk",
                               "created": created, "model": model, "choices": [],
                               "usage": _usage(event.get("usage") or {})})
    yield sse("[DONE]")
