"""Who is asking: bearer keys resolve to a Principal with a scope, `chat` or `admin`.

Keys: AGENTMODES_API_KEY (admin), AGENTMODES_CHAT_API_KEY (chat, shared by all who hold
it), and the keys of users an admin created (their own role; looked up by hash). 401 when
a key is required and missing or unknown, 403 when the key is valid but lacks the scope.
Keys are compared in constant time and never logged or echoed back.

A server with no key and no user is keyless: every request acts as the local operator
(admin), which is why such a server listens on loopback only and guard.py refuses
requests from other sites.
"""

from __future__ import annotations

import hmac
from typing import Literal, Optional

from fastapi import Depends, HTTPException, Request
from starlette.requests import HTTPConnection

from ..service import AgentChatService
from ..store.users import ENV_ADMIN, ENV_CHAT, LOCAL, Principal
from .admission import Busy
from .config import ServerConfig

Scope = Literal["chat", "admin"]


def _matches(token: str, key: Optional[str]) -> bool:
    return bool(key) and hmac.compare_digest(token.encode("utf-8", "surrogatepass"),
                                             key.encode("utf-8", "surrogatepass"))


def auth_required(conn: HTTPConnection) -> bool:
    config: ServerConfig = conn.app.state.config
    service: AgentChatService = conn.app.state.service
    return config.auth_enabled or service.has_users()


def resolve(conn: HTTPConnection, token: Optional[str]) -> Optional[Principal]:
    """The principal a token stands for, or None if it grants nothing."""
    config: ServerConfig = conn.app.state.config
    if token and isinstance(token, str):    # a WebSocket message may carry any JSON there
        if _matches(token, config.admin_key):
            return ENV_ADMIN
        if _matches(token, config.chat_key):
            return ENV_CHAT
        found = conn.app.state.service.authenticate(token)
        if found is not None:
            return found
    return None if auth_required(conn) else LOCAL


def bearer_token(authorization: Optional[str]) -> Optional[str]:
    if not authorization:
        return None
    kind, _, token = authorization.partition(" ")
    return token.strip() if kind.lower() == "bearer" and token.strip() else None


class AuthError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def authorize(conn: HTTPConnection, token: Optional[str], needed: Scope) -> Principal:
    principal = resolve(conn, token)
    if principal is None:
        raise AuthError(401, "missing or unknown API key (send Authorization: Bearer <key>)")
    if needed == "admin" and not principal.is_admin:
        raise AuthError(403, "this API key has the chat scope; this action needs an admin key")
    return principal


def require(needed: Scope):
    """A FastAPI dependency that enforces `needed` and records the principal."""
    def dependency(request: Request) -> Principal:
        try:
            principal = authorize(request, bearer_token(request.headers.get("authorization")),
                                  needed)
        except AuthError as err:
            headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
            raise HTTPException(err.status, str(err), headers=headers) from None
        request.state.principal = principal
        return principal
    return Depends(dependency)


def principal_of(request: Request) -> Principal:
    """The principal a route's scope dependency resolved."""
    return request.state.principal


def rate_limited(kind: str):
    """A dependency (after the scope one) that meters `kind` requests per principal."""
    def dependency(request: Request) -> None:
        limiter = request.app.state.rate_limiter
        try:
            limiter.check(kind, principal_of(request).owner)
        except Busy as err:
            raise HTTPException(429, str(err),
                                headers={"Retry-After": str(err.retry_after)}) from None
    return Depends(dependency)


chat_scope = require("chat")
admin_scope = require("admin")
chat_rate = rate_limited("chat")
upload_rate = rate_limited("upload")
