"""REST for conversations and their messages (with traces), and a non-streaming chat call.

Every route acts for the request's principal: a user sees and continues only the
conversations it started (admins: all); someone else's conversation is a 404, exactly like
one that does not exist.
"""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from .. import transcript
from ..errors import AgentModesError
from ..service import AgentChatService
from .auth import admin_scope, chat_rate, chat_scope, principal_of
from .schemas import (ChatRequest, ConversationCreate, ConversationUpdate, conversation_json,
                      message_json)
from .streaming import cancel_on_disconnect, events_of, open_stream

router = APIRouter(prefix="/api", tags=["conversations"], dependencies=[chat_scope])
MAX_OFFSET = 10**9          # beyond any real list; larger numbers overflow the database


def _service(request: Request) -> AgentChatService:
    return request.app.state.service


@router.get("/conversations")
def list_conversations(request: Request, chatbot: Optional[str] = None,
                       limit: int = Query(50, ge=1, le=500),
                       offset: int = Query(0, ge=0, le=MAX_OFFSET)) -> list[dict]:
    convs = _service(request).list_conversations(chatbot, limit=limit, offset=offset,
                                                 user=principal_of(request))
    return [conversation_json(c) for c in convs]


@router.post("/conversations", status_code=201)
def create_conversation(body: ConversationCreate, request: Request) -> dict:
    return conversation_json(_service(request).start_conversation(
        body.chatbot, body.title, user=principal_of(request)))


@router.get("/conversations/{conversation_id}")
def get_conversation(conversation_id: str, request: Request) -> dict:
    service, user = _service(request), principal_of(request)
    conv = service.get_conversation(conversation_id, user=user)
    return {**conversation_json(conv),
            "messages": [message_json(m) for m in service.messages(conversation_id, user=user)]}


@router.patch("/conversations/{conversation_id}")
def rename_conversation(conversation_id: str, body: ConversationUpdate, request: Request) -> dict:
    service = _service(request)
    service.get_conversation(conversation_id, user=principal_of(request))
    return conversation_json(service.store.rename_conversation(conversation_id, body.title.strip()))


@router.get("/conversations/{conversation_id}/export")
def export_conversation(conversation_id: str, request: Request,
                        format: str = Query("md", pattern="^(md|json)$")) -> Response:
    """The conversation as a Markdown or JSON file (a download: Content-Disposition)."""
    service, user = _service(request), principal_of(request)
    conv = service.get_conversation(conversation_id, user=user)
    messages = service.messages(conversation_id, user=user)
    body, media = ((transcript.to_json(conv, messages), "application/json") if format == "json"
                   else (transcript.to_markdown(conv, messages), "text/markdown"))
    name = transcript.filename(conv, format)
    return Response(body, media_type=f"{media}; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.delete("/conversations/{conversation_id}", status_code=204, dependencies=[admin_scope])
def delete_conversation(conversation_id: str, request: Request) -> None:
    _service(request).delete_conversation(conversation_id, user=principal_of(request))


@router.post("/chat", dependencies=[chat_rate])
async def chat(body: ChatRequest, request: Request) -> dict:
    """Ask and wait for the whole answer; returns the stored assistant message. A client
    that disconnects cancels its run (stored as `cancelled`), also while it waits."""
    service, user = _service(request), principal_of(request)
    done, failure = None, "the run ended without an answer"
    async with cancel_on_disconnect(request):
        gen = await open_stream(request, lambda: service.stream(
            body.chatbot, body.message, conversation_id=body.conversation_id, mode=body.mode,
            reflect=body.reflect, user=user))
        async with events_of(gen) as events:
            async for event in events:
                if event.get("done"):
                    done = event
                elif event.get("status") == "error" and event.get("fatal"):
                    failure = event.get("message", failure)
    if done is None:
        raise AgentModesError(failure)
    return message_json(service.store.get_message(done["message_id"]))
