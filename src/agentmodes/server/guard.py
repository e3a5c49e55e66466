"""What every response carries, and what a keyless server refuses to answer.

A server started without keys acts for its local operator on every request, so any web
page that operator visits could drive it: a cross-site form post uploads a document, a
cross-site WebSocket reads answers, and DNS rebinding turns an attacker's host name into
127.0.0.1. Such a server therefore answers only requests that come from its own page:

- the Host header must name the server itself (a loopback name or address, the address it
  is bound to, or one of AGENTMODES_ALLOWED_HOSTS): a rebound host name does not;
- an Origin header (browsers send it on every cross-origin POST and on every WebSocket)
  must be the server's own origin or one of AGENTMODES_CORS_ORIGINS;
- Sec-Fetch-Site: cross-site is refused the same way.

Requests without Origin (curl, the OpenAI client, scripts) are not from a web page and pass.
A server with keys needs none of this: its credentials are bearer keys the page keeps in
its own storage, never ambient cookies, so another site's request arrives without them.

Every HTTP response gets nosniff, frame denial, no referrer and a Content-Security-Policy
allowing only the server's own scripts, styles and WebSocket (a route may set its own).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import auth_required
from .config import ServerConfig, bare_host

LOOPBACK_NAMES = {"localhost", "localhost."}
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.:\[\]-]{1,300}")


def page_csp(host: str) -> str:
    """The web page's policy: its own files only, and its own WebSocket."""
    # Named explicitly: older browsers do not count ws: as 'self'. Only a plain host name
    # goes into the header (the Host header is the client's to choose).
    sockets = f" ws://{host} wss://{host}" if _PLAIN_HOST.fullmatch(host) else ""
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'{sockets}; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def _host_name(host_header: str) -> str:
    """`example.org:8000` -> `example.org`, `[::1]:8000` -> `::1`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _is_own_host(name: str, scope: Scope, config: ServerConfig) -> bool:
    if name in LOOPBACK_NAMES or name in (h.lower() for h in config.allowed_hosts):
        return True
    server = scope.get("server")
    if server and name == bare_host(str(server[0])).lower():
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refusal(scope: Scope, headers: Headers, config: ServerConfig) -> str | None:
    """Why a keyless server must not answer this request, or None."""
    host = headers.get("host", "")
    if not _is_own_host(_host_name(host), scope, config):
        return (f"refused: the Host header {host!r} does not name this server (a server "
                "without API keys answers only its own address; see AGENTMODES_ALLOWED_HOSTS)")
    origin = headers.get("origin")
    if origin is not None and origin not in config.cors_origins:
        if urlsplit(origin).netloc.lower() != host.lower() or origin == "null":
            return (f"refused: a request from the page {origin!r}; a server without API keys "
                    "answers only its own page (see AGENTMODES_CORS_ORIGINS)")
    elif origin is None and headers.get("sec-fetch-site") == "cross-site":
        return "refused: a cross-site request to a server without API keys"
    return None


class KeylessGuard:
    """ASGI middleware: the checks above, on HTTP and WebSocket, while no key is set."""

    def __init__(self, app: ASGIApp, config: ServerConfig):
        self.app, self.config = app, config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            reason = refusal(scope, Headers(scope=scope), self.config)
            if reason and not auth_required(HTTPConnection(scope)):
                if scope["type"] == "websocket":
                    # Closing before accepting makes the handshake fail with 403.
                    await send({"type": "websocket.close", "code": 1008, "reason": "forbidden"})
                    return
                await JSONResponse({"detail": reason}, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """ASGI middleware adding the headers every HTTP response should carry."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("X-Frame-Options", "DENY")
                headers.setdefault("Referrer-Policy", "no-referrer")
                headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
                headers.setdefault("Content-Security-Policy", page_csp(host))
            await send(message)

        await self.app(scope, receive, with_headers)
