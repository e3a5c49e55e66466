"""Request bodies and the JSON shape of stored objects (secrets masked).

Every request body is a StrictModel: text anywhere in it (settings included) must be valid
Unicode. A lone surrogate such as "\\ud800" is legal in a JSON escape but cannot be encoded
as UTF-8, so once stored it broke every response that showed it; it is refused with 422.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field, model_validator

from ..service import public_settings
from ..store.chat import Chatbot, Conversation, IngestJob, StoredMessage

Mode = Literal["act", "react", "reflact", "plan-and-solve"]


def has_lone_surrogate(value: Any) -> bool:
    """True if any string in `value` (keys too, at any depth) is not encodable as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_lone_surrogate(v) for v in value)
    return False


class StrictModel(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        if has_lone_surrogate(data):
            raise ValueError("text contains a lone surrogate (U+D800-U+DFFF), which is not "
                             "valid Unicode")
        return data


class ChatbotCreate(StrictModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field("", max_length=2000)
    language: Optional[Literal["auto", "de", "en", "zh"]] = None
    settings: dict[str, Any] = Field(default_factory=dict)


class ChatbotUpdate(StrictModel):
    description: Optional[str] = Field(None, max_length=2000)
    language: Optional[Literal["auto", "de", "en", "zh"]] = None
    settings: Optional[dict[str, Any]] = None


class ConversationCreate(StrictModel):
    chatbot: str = Field(max_length=100)
    title: str = Field("", max_length=200)


class ConversationUpdate(StrictModel):
    title: str = Field(min_length=1, max_length=200)


class ChatRequest(StrictModel):
    chatbot: str = Field("default", max_length=100)
    message: str = Field(min_length=1, max_length=20_000)
    conversation_id: Optional[str] = Field(None, max_length=64)
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
