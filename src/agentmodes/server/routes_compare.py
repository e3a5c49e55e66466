"""`POST /api/chatbots/{name}/compare`: one question in two or three modes, side by side.

Body: {"message": "...", "modes": ["act", "react", "reflact"], "reflect": 0}. The answer is
text/event-stream, one `data:` JSON frame per event of each mode's run, tagged with its
lane (compare/live.py has the frames). Same auth as chat (the chat scope), same body
limits as a chat request; nothing is stored (a comparison is not a conversation).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import Field, field_validator

from ..compare.live import chatbot_lanes, compare_stream
from .auth import chat_rate, chat_scope
from .schemas import StrictModel
from .streaming import open_stream, sse_events

router = APIRouter(prefix="/api", tags=["streaming"])
StepMode = Literal["act", "react", "reflact", "plan-and-solve"]


class CompareRequest(StrictModel):
    message: str = Field(min_length=1, max_length=20_000)
    modes: list[StepMode] = Field(default_factory=lambda: ["act", "react", "reflact"],
                                  min_length=2, max_length=3)
    # Reflection rounds on top of every mode's answer (as in chat); 0 = none.
    reflect: int = Field(0, ge=0, le=3)

    @field_validator("modes")
    @classmethod
    def _distinct(cls, modes: list[str]) -> list[str]:
        if len(set(modes)) != len(modes):
            raise ValueError("each mode once")
        return modes


@router.post("/chatbots/{name}/compare", dependencies=[chat_scope, chat_rate])
async def compare(name: str, body: CompareRequest, request: Request) -> StreamingResponse:
    service = request.app.state.service

    def start():
        lanes, parallel = chatbot_lanes(service, name, body.message, body.modes, body.reflect)
        return compare_stream(lanes, parallel)

    gen = await open_stream(request, start)     # one run slot for the whole comparison
    return sse_events(gen)
