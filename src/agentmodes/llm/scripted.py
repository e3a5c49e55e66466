"""A model that replays given outputs and records the prompts it was sent.

For deterministic tests of the loop and the modes, and for measuring framework overhead
with the LLM taken out. Each reply is either a string (streamed in small pieces, as a real
backend would) or a list of ToolCallDelta-compatible dicts for native tool calls.
"""

from __future__ import annotations

import copy
from typing import Iterable, Iterator, Union

from ..errors import LLMError
from ..events import Usage
from .base import ChatChunk, GenerationOptions, Message, ToolCallDelta

Reply = Union[str, list[dict]]


class ScriptedModel:
    name = "scripted"
    supports_grammar = False

    def __init__(self, replies: Iterable[Reply], *, supports_tools: bool = False,
                 chunk_size: int = 8, cycle: bool = False):
        self.replies = list(replies)
        self.supports_tools = supports_tools
        self.chunk_size = chunk_size
        self.cycle = cycle
        self.calls: list[dict] = []      # what each call received: messages and options
        self._next = 0

    @property
    def prompts(self) -> list[list[Message]]:
        return [c["messages"] for c in self.calls]

    def stream(self, messages: list[Message], options: GenerationOptions | None = None
               ) -> Iterator[ChatChunk]:
        options = options or GenerationOptions()
        if self._next >= len(self.replies):
            if not self.cycle or not self.replies:
                raise LLMError(f"scripted model has no reply left (after {self._next} calls)")
            self._next = 0
        reply = self.replies[self._next]
        self._next += 1
        self.calls.append({"messages": copy.deepcopy(messages), "options": options})
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        if isinstance(reply, str):
            text = _apply_stop(reply, options.stop)
            for i in range(0, len(text), self.chunk_size):
                yield ChatChunk(text=text[i:i + self.chunk_size])
            completion = len(text.split())
            yield ChatChunk(usage=Usage(prompt_tokens, completion, 0, 1), finish_reason="stop")
        else:
            deltas = [ToolCallDelta(index=i, id=c.get("id", f"call_{i}"), name=c["name"],
                                    arguments=c.get("arguments", "")) for i, c in enumerate(reply)]
            yield ChatChunk(tool_calls=deltas)
            yield ChatChunk(usage=Usage(prompt_tokens, len(deltas), 0, 1),
                            finish_reason="tool_calls")

    def close(self) -> None:
        pass


def _apply_stop(text: str, stop: list[str] | None) -> str:
    """Cut at the first stop sequence, as servers do."""
    if not stop:
        return text
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]
