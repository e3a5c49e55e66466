"""The one interface every LLM backend implements.

A backend streams ChatChunks: text deltas, native tool-call deltas, and finally the usage
of the call. Messages are OpenAI-style dicts ({"role", "content"}, optional "tool_calls" /
"tool_call_id"), because that is the wire format of most servers users point us at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Protocol, runtime_checkable

from ..events import Usage

Message = dict[str, Any]


@dataclass(slots=True)
class ToolSpec:
    """A tool offered to a model with native tool calling (OpenAI "function" schema)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a native tool call; fragments with the same index concatenate."""

    index: int = 0
    id: Optional[str] = None
    name: Optional[str] = None
    arguments: str = ""


@dataclass(slots=True)
class ChatChunk:
    text: str = ""
    tool_calls: Optional[list[ToolCallDelta]] = None
    usage: Optional[Usage] = None        # set on the last chunk of a call
    finish_reason: Optional[str] = None


@dataclass(slots=True)
class GenerationOptions:
    """Per-call options. `grammar` is a GBNF grammar: the embedded backend enforces it, an
    OpenAI-compatible backend forwards it as llama.cpp server's `grammar` field only when
    configured to, and otherwise ignores it (the parser tolerates free text).
    `response_format` is OpenAI's ({"type": "json_object"} or {"type": "json_schema",
    "json_schema": {"name", "schema"}}): forwarded as is by an OpenAI-compatible backend,
    enforced by the embedded backend as a grammar made from the schema."""

    stop: Optional[list[str]] = None
    max_tokens: Optional[int] = None
    temperature: float = 0.0
    tools: Optional[list[ToolSpec]] = None
    grammar: Optional[str] = None
    response_format: Optional[dict[str, Any]] = None


@runtime_checkable
class ChatModel(Protocol):
    """What the loop needs from a model."""

    name: str
    supports_tools: bool      # native tool calls
    supports_grammar: bool    # enforces GenerationOptions.grammar

    def stream(self, messages: list[Message], options: GenerationOptions | None = None
               ) -> Iterator[ChatChunk]:
        ...

    def close(self) -> None:
        ...
