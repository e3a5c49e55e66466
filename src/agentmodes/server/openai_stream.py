"""The /v1 stream: the agent's trace as `reasoning_content`, the answer as `content`, and SSE
comments while nothing else is sent.

`reasoning_content` is the field DeepSeek, vLLM and llama.cpp's server use for a model's
thinking; Open WebUI, LangChain (`additional_kwargs["reasoning_content"]`) and LiteLLM show
it as such. The trace is written as readable lines ("Reflection: ...", "Action:
rag_search(...)", "Observation: ...") so a client that only prints it still makes sense of
it. Between events (a long prompt evaluation, a slow tool) a `: keep-alive` comment goes out
every few seconds, which every SSE parser skips, so no client read timeout fires while the
agent works.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator, Optional

from ..events import Event

KEEPALIVE_ENV = "AGENTMODES_SSE_KEEPALIVE"
DEFAULT_KEEPALIVE_S = 5.0
OBSERVATION_CHARS = 600
KEEPALIVE = ": keep-alive\n\n"
_LABELS = {"reflection": "Reflection", "thought": "Thought", "action": "Action",
           "observation": "Observation", "answer": "Draft answer"}
_ROUND_LABELS = {"critique": "Critique", "refinement": "Refinement", "evaluation": "Evaluation"}
_QUIET = {"starting", "getting_action", "reflecting", "iteration", "final_answer"}


def keepalive_seconds() -> float:
    raw = os.environ.get(KEEPALIVE_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_KEEPALIVE_S
    except ValueError:
        value = DEFAULT_KEEPALIVE_S
    return value if value > 0 else DEFAULT_KEEPALIVE_S


class ReasoningText:
    """Turns step events into reasoning text, streaming deltas where the run streams them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._open: Optional[tuple[Any, str]] = None      # (iteration, kind) being streamed
        self._iteration: Any = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, event: Event) -> str:
        """The reasoning text this event adds ('' if none)."""
        piece = self._piece(event)
        if piece:
            self.parts.append(piece)
        return piece

    def _heading(self, iteration: Any) -> str:
        if iteration is None or iteration == self._iteration:
            return ""
        self._iteration = iteration
        lead = "\n" if self.parts else ""
        return f"{lead}Iteration {iteration}\n" if isinstance(iteration, int) else ""

    def _piece(self, event: Event) -> str:
        status = event.get("status")
        if not status or status in _QUIET:
            return ""
        iteration = event.get("iteration")
        if status.endswith("_delta"):
            kind = status[:-len("_delta")]
            if kind not in _LABELS:
                return ""
            head = self._heading(iteration)
            if self._open != (iteration, kind):
                self._open = (iteration, kind)
                head += f"{_LABELS[kind]}: "
            return head + str(event.get("delta") or "")
        streamed = self._open == (iteration, status)
        self._open = None
        body = self._body(status, event)
        if not body:
            return ""
        if streamed:            # its text went out as deltas: only end the line
            return "" if self.parts and self.parts[-1].endswith("\n") else "\n"
        return self._heading(iteration) + body + "\n"

    @staticmethod
    def _body(status: str, event: Event) -> str:
        if status in ("reflection", "thought"):
            text = str(event.get(status) or "")
            return f"{_LABELS[status]}: {text}" if text else ""
        if status == "action":
            return f'Action: {event.get("action")}("{event.get("param") or ""}")'
        if status == "observation":
            text = str(event.get("result_preview") or "")
            if len(text) > OBSERVATION_CHARS:
                text = text[:OBSERVATION_CHARS] + " …"
            return f"Observation: {text}"
        if status in ("adaptive_iteration", "adaptive_response"):
            return "Confident enough to answer" if status == "adaptive_iteration" else ""
        if status == "max_iterations_reached":
            return "Iteration limit reached; answering with what was found"
        if status in _ROUND_LABELS:
            label = _ROUND_LABELS[status]
            if status == "critique" and event.get("verdict"):
                label += f" ({event['verdict']})"
            return f"{label}: {event.get('content') or event.get('feedback') or ''}".rstrip(": ")
        if status == "error":
            return f"Error: {event.get('message', '')}"
        if status == "parse_error":
            return "The step could not be read; asking the model again"
        if status == "repeated_action":
            return "The same action again; trying something else"
        return ""


async def with_keepalive(events: AsyncIterator[Event], interval: float
                         ) -> AsyncIterator[Optional[Event]]:
    """The events, with None whenever `interval` seconds pass without one."""
    iterator = events.__aiter__()
    pending = asyncio.ensure_future(iterator.__anext__())
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield None
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            yield event
            pending = asyncio.ensure_future(iterator.__anext__())
    finally:
        if not pending.done():
            pending.cancel()
            try:
                await pending
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
