"""Request bodies and the JSON shape of stored objects (secrets masked)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from ..service import public_settings
from ..store.chat import Chatbot, Conversation, IngestJob, StoredMessage

Mode = Literal["act", "react", "reflact", "plan-and-solve"]


class ChatbotCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    language: Optional[Literal["auto", "de", "en", "zh"]] = None
    settings: dict[str, Any] = Field(default_factory=dict)


class ChatbotUpdate(BaseModel):
    description: Optional[str] = None
    language: Optional[Literal["auto", "de", "en", "zh"]] = None
    settings: Optional[dict[str, Any]] = None


class ConversationCreate(BaseModel):
    chatbot: str
    title: str = ""


class ConversationUpdate(BaseModel):
    title: str = Field(min_length=1, max_length=200)


class ChatRequest(BaseModel):
    chatbot: str = "default"
    message: str = Field(min_length=1, max_length=20_000)
    conversation_id: Optional[str] = None
    mode: Optional[Mode] = None
    # Reflection rounds (critique, refine) over the mode's answer; 0 = none.
    reflect: int = Field(0, ge=0, le=3)


def chatbot_json(bot: Chatbot) -> dict[str, Any]:
    data = asdict(bot)
    data["settings"] = public_settings(bot.settings)
    data.pop("kb_path")               # server-side path: not the client's business
    return data


def conversation_json(conv: Conversation) -> dict[str, Any]:
    return asdict(conv)


def message_json(message: StoredMessage) -> dict[str, Any]:
    return asdict(message)


def job_json(job: IngestJob) -> dict[str, Any]:
    return asdict(job)
