"""OpenAI's error shape on every error under /v1, whoever produced it.

OpenAI clients read `{"error": {"message", "type", "param", "code"}}`; the rest of the API
answers `{"detail": ...}` (FastAPI's shape). Errors under /v1 come from many places: the
auth dependency (401/403), request validation (422), the body size limit (413), rate limits
and the run queue (429), guards in other middleware, unknown paths (404) and methods (405),
and crashes (500). Rather than each of them knowing about OpenAI, this middleware rewrites
a JSON error response under /v1 that is not yet in OpenAI's shape, keeping its status and
headers (Retry-After, WWW-Authenticate), and turns an unhandled exception into a 500 in that
shape. Streams are left alone: their errors travel inside the stream.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("agentmodes.server")
PREFIX = "/v1"
MAX_MESSAGE_CHARS = 500
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
               409: "conflict_error", 413: "invalid_request_error",
               422: "invalid_request_error", 429: "rate_limit_error"}


def error_body(status: int, message: str, param: str | None = None,
               kind: str | None = None) -> dict[str, Any]:
    kind = kind or ERROR_TYPES.get(status, "server_error" if status >= 500 else
                                   "invalid_request_error")
    return {"error": {"message": message[:MAX_MESSAGE_CHARS], "type": kind, "param": param,
                      "code": status}}


def reshape(status: int, body: Any) -> dict[str, Any]:
    """FastAPI's {"detail": ...} (a string, or validation errors) as OpenAI's error."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        param = ".".join(loc) or None
        message = f"{param}: {first.get('msg', 'invalid')}" if param else str(first.get("msg"))
        return error_body(status, message, param)
    if isinstance(detail, str):
        return error_body(status, detail)
    return error_body(status, f"HTTP {status}")


class OpenAIErrorShape:
    """Pure ASGI, so it sees responses of routes, other middleware and unknown paths alike."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        chunks: list[bytes] = []
        started = False

        async def capture(message: Message) -> None:
            nonlocal start, started
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                is_json = headers.get(b"content-type", b"").startswith(b"application/json")
                if message["status"] >= 400 and is_json:
                    start = message            # hold it until the whole body is here
                    return
                started = True
                await send(message)
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    await self._send_reshaped(send, start, b"".join(chunks))
            else:
                await send(message)

        try:
            await self.app(scope, receive, capture)
        except Exception:
            if started or start is not None:
                raise
            log.exception("unhandled error under /v1")
            await _send_json(send, 500, [], error_body(500, "internal server error"))

    @staticmethod
    async def _send_reshaped(send: Send, start: Message, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not (isinstance(body, dict) and "error" in body):
            body = reshape(start["status"], body)
        status = start["status"]
        headers = [(k, v) for k, v in start.get("headers", [])
                   if k.lower() not in (b"content-length", b"content-type")]
        await _send_json(send, status, headers, body)


async def _send_json(send: Send, status: int, headers: list, body: dict) -> None:
    data = json.dumps(body, ensure_ascii=True).encode()
    await send({"type": "http.response.start", "status": status, "headers": headers + [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
