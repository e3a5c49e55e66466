"""REST for conversations and their messages (with traces), and a non-streaming chat call."""

from __future__ import annotations

from typing import Optional

import anyio.to_thread
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from .. import transcript
from ..service import AgentChatService
from .auth import admin_scope, chat_scope
from .schemas import (ChatRequest, ConversationCreate, ConversationUpdate, conversation_json,
                      message_json)

router = APIRouter(prefix="/api", tags=["conversations"], dependencies=[chat_scope])


def _service(request: Request) -> AgentChatService:
    return request.app.state.service


@router.get("/conversations")
def list_conversations(request: Request, chatbot: Optional[str] = None,
                       limit: int = Query(50, ge=1, le=500), offset: int = Query(0, ge=0)
                       ) -> list[dict]:
    convs = _service(request).list_conversations(chatbot, limit=limit, offset=offset)
    return [conversation_json(c) for c in convs]


@router.post("/conversations", status_code=201)
def create_conversation(body: ConversationCreate, request: Request) -> dict:
    return conversation_json(_service(request).start_conversation(body.chatbot, body.title))


@router.get("/conversations/{conversation_id}")
def get_conversation(conversation_id: str, request: Request) -> dict:
    service = _service(request)
    conv = service.get_conversation(conversation_id)
    return {**conversation_json(conv),
            "messages": [message_json(m) for m in service.messages(conversation_id)]}


@router.patch("/conversations/{conversation_id}")
def rename_conversation(conversation_id: str, body: ConversationUpdate, request: Request) -> dict:
    service = _service(request)
    service.get_conversation(conversation_id)
    return conversation_json(service.store.rename_conversation(conversation_id, body.title.strip()))


@router.get("/conversations/{conversation_id}/export")
def export_conversation(conversation_id: str, request: Request,
                        format: str = Query("md", pattern="^(md|json)$")) -> Response:
    """The conversation as a Markdown or JSON file (a download: Content-Disposition)."""
    service = _service(request)
    conv = service.get_conversation(conversation_id)
    messages = service.messages(conversation_id)
    body, media = ((transcript.to_json(conv, messages), "application/json") if format == "json"
                   else (transcript.to_markdown(conv, messages), "text/markdown"))
    name = transcript.filename(conv, format)
    return Response(body, media_type=f"{media}; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.delete("/conversations/{conversation_id}", status_code=204, dependencies=[admin_scope])
def delete_conversation(conversation_id: str, request: Request) -> None:
    _service(request).store.delete_conversation(conversation_id)


@router.post("/chat")
async def chat(body: ChatRequest, request: Request) -> dict:
    """Ask and wait for the whole answer; returns the stored assistant message."""
    service = _service(request)
    message = await anyio.to_thread.run_sync(
        lambda: service.ask(body.chatbot, body.message, conversation_id=body.conversation_id,
                            mode=body.mode, reflect=body.reflect))
    return message_json(message)
