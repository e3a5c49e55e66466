"""Assemble a streamed call into one value.

Backends stream ChatChunks because the loop shows reasoning as it arrives; callers that only
want the result (benchmarks, evaluators, a non-streaming API) collect the chunks here, and the
native tool-call fragments are put together in one place instead of in every consumer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..events import Usage
from .base import ChatChunk


@dataclass(slots=True)
class ToolCall:
    """A complete native tool call; `arguments` is the JSON text the model wrote."""

    id: Optional[str]
    name: str
    arguments: str


@dataclass(slots=True)
class Completion:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: Optional[str] = None


def collect(chunks: Iterable[ChatChunk]) -> Completion:
    """Drain a stream: text concatenated, tool-call fragments joined by index, last usage kept.

    Fragments with the same index belong to one call: the id and name arrive once (the first
    non-empty value wins), the JSON arguments arrive in pieces and concatenate.
    """
    parts: list[str] = []
    calls: dict[int, dict] = {}
    result = Completion()
    for chunk in chunks:
        if chunk.text:
            parts.append(chunk.text)
        for delta in chunk.tool_calls or ():
            call = calls.setdefault(delta.index, {"id": None, "name": "", "arguments": []})
            call["id"] = call["id"] or delta.id
            call["name"] = call["name"] or (delta.name or "")
            call["arguments"].append(delta.arguments or "")
        if chunk.usage is not None:
            result.usage = chunk.usage
        if chunk.finish_reason:
            result.finish_reason = chunk.finish_reason
    result.text = "".join(parts)
    result.tool_calls = [ToolCall(c["id"], c["name"], "".join(c["arguments"]))
                         for _, c in sorted(calls.items())]
    return result
