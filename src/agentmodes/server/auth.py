"""Bearer-token scopes: `chat` (ask, read) and `admin` (everything).

401 when a key is required and missing or unknown, 403 when the key is valid but lacks the
scope. Keys are compared in constant time and never logged or echoed back.
"""

from __future__ import annotations

import hmac
from typing import Literal, Optional

from fastapi import Depends, HTTPException, Request

from .config import ServerConfig

Scope = Literal["chat", "admin"]


def _matches(token: str, key: Optional[str]) -> bool:
    return bool(key) and hmac.compare_digest(token.encode(), key.encode())


def scope_of(config: ServerConfig, token: Optional[str]) -> Optional[Scope]:
    """The scope a token grants, or None if it grants nothing."""
    if not config.auth_enabled:
        return "admin"              # no keys configured: loopback-only, open server
    if not token:
        return None
    if _matches(token, config.admin_key):
        return "admin"
    if _matches(token, config.chat_key):
        return "chat"
    return None


def bearer_token(authorization: Optional[str]) -> Optional[str]:
    if not authorization:
        return None
    kind, _, token = authorization.partition(" ")
    return token.strip() if kind.lower() == "bearer" and token.strip() else None


class AuthError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check(config: ServerConfig, token: Optional[str], needed: Scope) -> None:
    granted = scope_of(config, token)
    if granted is None:
        raise AuthError(401, "missing or unknown API key (send Authorization: Bearer <key>)")
    if needed == "admin" and granted != "admin":
        raise AuthError(403, "this API key has the chat scope; this action needs the admin key")


def require(needed: Scope):
    """A FastAPI dependency that enforces `needed` for a route."""
    def dependency(request: Request) -> None:
        config: ServerConfig = request.app.state.config
        try:
            check(config, bearer_token(request.headers.get("authorization")), needed)
        except AuthError as err:
            headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
            raise HTTPException(err.status, str(err), headers=headers) from None
    return Depends(dependency)


chat_scope = require("chat")
admin_scope = require("admin")
