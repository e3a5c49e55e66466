"""REST for users (admin only): each user gets a key of its own, shown once, and a role.

    POST   /api/users {"name": "alice", "role": "chat"}  -> 201 {..., "key": "am_..."}
    GET    /api/users                                   -> [{"name", "role", "created_at"}]
    POST   /api/users/{name}/key                        -> {"key": "am_..."} (old key dies)
    DELETE /api/users/{name}                            -> 204 (key dies; conversations stay)

The same from the command line: `agentmodes users add|list|remove|rotate --db FILE`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from fastapi import APIRouter, Request
from pydantic import Field

from ..service import AgentChatService
from .auth import admin_scope
from .schemas import StrictModel

router = APIRouter(prefix="/api/users", tags=["users"], dependencies=[admin_scope])


class UserCreate(StrictModel):
    name: str = Field(min_length=1, max_length=100)
    role: Literal["chat", "admin"] = "chat"


def _service(request: Request) -> AgentChatService:
    return request.app.state.service


@router.get("")
def list_users(request: Request) -> list[dict]:
    return [asdict(u) for u in _service(request).list_users()]


@router.post("", status_code=201)
def create_user(body: UserCreate, request: Request) -> dict:
    user, key = _service(request).create_user(
        body.name, body.role, admin_key_set=bool(request.app.state.config.admin_key))
    return {**asdict(user), "key": key}


@router.post("/{name}/key")
def rotate_key(name: str, request: Request) -> dict:
    return {"name": name, "key": _service(request).rotate_user_key(name)}


@router.delete("/{name}", status_code=204)
def delete_user(name: str, request: Request) -> None:
    _service(request).delete_user(name)
