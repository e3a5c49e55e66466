"""The event vocabulary every run emits (seeds 000/002, "Events (WebSocket)").

Events are plain dicts so they serialise to JSON unchanged for the CLI's --json, the
WebSocket/SSE server and the persisted agent_trace. Step events carry "status"; answer
tokens are {"delta": ...}; the last event is {"done": True, ...}. Every event that follows
an LLM call carries "usage" (prompt_tokens, completion_tokens) of that call.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

Event = dict[str, Any]

STATUSES = frozenset({
    "starting", "iteration", "getting_action", "reflecting", "reflection_delta", "reflection",
    "thought_delta", "thought", "action_delta", "action", "observation_delta", "observation",
    "adaptive_iteration", "adaptive_response", "max_iterations_reached", "final_answer",
    "parse_error", "repeated_action", "error",
    # Plan-and-Solve: the plan call before the first iteration
    "planning", "plan_delta", "plan",
    # Reflection / Reflexion (seeds 001 and 004)
    "trial", "draft", "critique", "refinement", "evaluation", "self_reflection", "memory",
})


@dataclass(slots=True)
class Usage:
    """Token usage of one or more LLM calls; adding two Usage values sums them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the backend did not have to evaluate again (KV-cache prefix reuse).
    cached_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.calls + other.calls)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def status(name: str, **fields: Any) -> Event:
    """Build a step event; the name must be one of STATUSES (catches typos in modes)."""
    if name not in STATUSES:
        raise ValueError(f"unknown event status {name!r}")
    return {"status": name, **fields}


def is_done(event: Event) -> bool:
    return event.get("done") is True


def final_event(events: Iterator[Event]) -> Event:
    """Drain a stream and return its done event (raises if the stream had none)."""
    last = None
    for last in events:
        pass
    if last is None or not is_done(last):
        raise RuntimeError("event stream ended without a done event")
    return last
