"""Streaming the seed events: a WebSocket (many questions per connection) and SSE.

WebSocket protocol (JSON text frames):
  client -> {"chatbot": "default", "message": "...", "conversation_id"?: "...", "mode"?: "react",
             "reflect"?: 1, "token"?: "<api key>"}
            (token only once per socket, and only without an Authorization header)
  client -> {"type": "cancel"}         stops the current answer (stored as `cancelled`);
                                       the server confirms with {"cancelled": true}
  server -> every event of the run, the last being {"done": true, ..., "conversation_id",
            "message_id"} or {"status": "error", "message": ...}
A client that disconnects mid-answer cancels the run the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Optional

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from ..errors import AgentModesError
from ..service import AgentChatService
from .auth import AuthError, bearer_token, chat_scope, check
from .schemas import ChatRequest
from .streaming import events_of, open_stream, sse

router = APIRouter(prefix="/api", tags=["streaming"])
log = logging.getLogger("agentmodes.server")


@router.post("/chat/stream", dependencies=[chat_scope])
async def chat_sse(body: ChatRequest, request: Request) -> StreamingResponse:
    """The same events as the WebSocket, as text/event-stream (one `data:` JSON per event)."""
    service: AgentChatService = request.app.state.service
    gen = await open_stream(lambda: service.stream(
        body.chatbot, body.message, conversation_id=body.conversation_id, mode=body.mode,
        reflect=body.reflect))

    async def frames():
        async with events_of(gen) as events:
            async for event in events:
                yield sse(event)

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


class _Session:
    """One WebSocket: a reader task collects requests and cancel signals while a run streams."""

    def __init__(self, ws: WebSocket):
        self.ws = ws
        self.requests: asyncio.Queue[Optional[dict]] = asyncio.Queue()
        self.cancel = asyncio.Event()
        self.gone = False

    async def read(self) -> None:
        try:
            while True:
                text = await self.ws.receive_text()
                try:
                    message = json.loads(text)
                except json.JSONDecodeError:
                    message = {"type": "invalid"}
                if isinstance(message, dict) and message.get("type") == "cancel":
                    self.cancel.set()
                else:
                    await self.requests.put(message if isinstance(message, dict) else {})
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            self.gone = True
            self.cancel.set()
            await self.requests.put(None)

    async def send(self, event: dict[str, Any]) -> bool:
        try:
            await self.ws.send_json(event)
            return True
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.gone = True
            return False


@router.websocket("/ws")
async def chat_ws(ws: WebSocket) -> None:
    await ws.accept()
    config = ws.app.state.config
    service: AgentChatService = ws.app.state.service
    session = _Session(ws)
    reader = asyncio.create_task(session.read())
    token = bearer_token(ws.headers.get("authorization"))
    authorized = False
    try:
        while (message := await session.requests.get()) is not None:
            try:
                if not authorized:
                    check(config, token or message.get("token"), "chat")
                    authorized = True
                request = ChatRequest(**{k: v for k, v in message.items() if k != "token"})
            except AuthError as err:
                await session.send({"status": "error", "message": str(err), "code": err.status})
                await ws.close(code=4000 + err.status)
                return
            except ValidationError as err:
                await session.send({"status": "error", "code": 422,
                                    "message": f"bad request: {err.errors()[0]['msg']}"})
                continue
            await _answer(session, service, request)
            if session.gone:
                return
    finally:
        reader.cancel()


async def _answer(session: _Session, service: AgentChatService, request: ChatRequest) -> None:
    session.cancel.clear()
    try:
        gen = await open_stream(lambda: service.stream(
            request.chatbot, request.message, conversation_id=request.conversation_id,
            mode=request.mode, reflect=request.reflect))
    except AgentModesError as err:
        await session.send({"status": "error", "message": str(err), "fatal": True})
        return
    except Exception:           # e.g. the database stayed locked: this question fails, not the socket
        log.exception("could not start a run")
        await session.send({"status": "error", "message": "internal error", "fatal": True})
        return
    stopped = False
    async with events_of(gen) as events:
        async for event in events:
            # Leaving the loop closes the run: client gone, or it asked to cancel. Events are
            # pulled one at a time, so a run never gets ahead of what the client has seen.
            if session.cancel.is_set() or not await session.send(event):
                stopped = True
                break
    if stopped and not session.gone:
        await session.send({"cancelled": True})
