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

Bounds (ServerConfig): at most `ws_max` sockets, of which at most `ws_max_pending` not yet
authenticated; a socket must authenticate (key in the header or in its first message)
within `ws_auth_timeout_s` and is closed after `ws_idle_timeout_s` without a question
(code 4408). A question beyond the key's rate limit or the run queue gets
{"status": "error", "code": 429, "retry_after": seconds} and the socket stays open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Optional

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import Response
from pydantic import ValidationError

from ..errors import AgentModesError
from ..service import AgentChatService
from ..store.users import Principal
from .admission import Busy
from .auth import AuthError, authorize, bearer_token, chat_rate, chat_scope, principal_of
from .config import ServerConfig
from .schemas import ChatRequest
from .streaming import cancel_on_disconnect, events_of, open_stream, sse_events

router = APIRouter(prefix="/api", tags=["streaming"])
log = logging.getLogger("agentmodes.server")


@router.post("/chat/stream", dependencies=[chat_scope, chat_rate])
async def chat_sse(body: ChatRequest, request: Request) -> Response:
    """The same events as the WebSocket, as text/event-stream (one `data:` JSON per event)."""
    service: AgentChatService = request.app.state.service
    user = principal_of(request)
    gen = None
    async with cancel_on_disconnect(request):       # gave up while waiting for a slot
        gen = await open_stream(request, lambda: service.stream(
            body.chatbot, body.message, conversation_id=body.conversation_id, mode=body.mode,
            reflect=body.reflect, user=user))
    if gen is None:
        return Response(status_code=499)

    return sse_events(gen)


@dataclass(slots=True)
class SocketCount:
    """Open WebSockets, and those among them not yet authenticated (one per app)."""
    open: int = 0
    pending: int = 0


class _Session:
    """One WebSocket: a reader task collects requests and cancel signals while a run streams."""

    def __init__(self, ws: WebSocket):
        self.ws = ws
        self.requests: asyncio.Queue[Optional[dict]] = asyncio.Queue()
        self.cancel = asyncio.Event()
        self.left = asyncio.Event()
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
            self.left.set()
            self.cancel.set()
            await self.requests.put(None)

    async def send(self, event: dict[str, Any]) -> bool:
        try:
            await self.ws.send_json(event)
            return True
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.gone = True
            return False

    async def next_request(self, timeout: float) -> Optional[dict]:
        """The next request, or None when the client left or stayed silent too long."""
        try:
            return await asyncio.wait_for(self.requests.get(), timeout)
        except asyncio.TimeoutError:
            await self.send({"status": "error", "code": 408,
                             "message": f"no request within {timeout:g} s; closing"})
            await self.ws.close(code=4408)
            return None


@router.websocket("/ws")
async def chat_ws(ws: WebSocket) -> None:
    config: ServerConfig = ws.app.state.config
    count: SocketCount = ws.app.state.sockets
    token = bearer_token(ws.headers.get("authorization"))
    user: Optional[Principal] = None
    if token:
        try:
            user = authorize(ws, token, "chat")
        except AuthError:
            user = None                 # said after accepting, below
    if count.open >= config.ws_max or (user is None and count.pending >= config.ws_max_pending):
        await ws.close(code=1013)       # before accepting: the handshake fails (try later)
        return
    await ws.accept()
    ws.state.pending = user is None
    count.open += 1
    count.pending += ws.state.pending
    try:
        await _serve_socket(ws, config, count, token, user)
    finally:
        count.open -= 1
        count.pending -= ws.state.pending


async def _serve_socket(ws: WebSocket, config: ServerConfig, count: SocketCount,
                        token: Optional[str], user: Optional[Principal]) -> None:
    service: AgentChatService = ws.app.state.service
    session = _Session(ws)
    reader = asyncio.create_task(session.read())
    try:
        while True:
            timeout = config.ws_idle_timeout_s if user else config.ws_auth_timeout_s
            message = await session.next_request(timeout)
            if message is None:
                return
            try:
                if user is None:
                    user = authorize(ws, token or message.get("token"), "chat")
                if ws.state.pending:
                    ws.state.pending = False
                    count.pending -= 1
                request = ChatRequest(**{k: v for k, v in message.items() if k != "token"})
                ws.app.state.rate_limiter.check("chat", user.owner)
            except AuthError as err:
                await session.send({"status": "error", "message": str(err), "code": err.status})
                await ws.close(code=4000 + err.status)
                return
            except ValidationError as err:
                await session.send({"status": "error", "code": 422,
                                    "message": f"bad request: {err.errors()[0]['msg']}"})
                continue
            except Busy as err:
                await session.send({"status": "error", "code": 429, "message": str(err),
                                    "retry_after": err.retry_after})
                continue
            await _answer(session, service, request, user)
            if session.gone:
                return
    finally:
        reader.cancel()


async def _answer(session: _Session, service: AgentChatService, request: ChatRequest,
                  user: Principal) -> None:
    session.cancel.clear()
    opening = asyncio.ensure_future(open_stream(session.ws, lambda: service.stream(
        request.chatbot, request.message, conversation_id=request.conversation_id,
        mode=request.mode, reflect=request.reflect, user=user)))
    left = asyncio.ensure_future(session.left.wait())
    await asyncio.wait({opening, left}, return_when=asyncio.FIRST_COMPLETED)
    left.cancel()
    if not opening.done():              # the client left while its question waited
        opening.cancel()
        return
    try:
        gen = opening.result()
    except Busy as err:
        await session.send({"status": "error", "code": 429, "message": str(err),
                            "retry_after": err.retry_after})
        return
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
