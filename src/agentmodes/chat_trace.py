"""Turn one run's event stream into what a stored message keeps.

The service persists what the events already say and derives nothing else (DESIGN: "no
consumer re-derives what an event already says"): the answer is the concatenated
{"delta"} tokens (or the done event's full_response), the agent_trace groups the step events
by iteration (reflection or thought, action, observation, adaptive exit), and
stream_metadata is the seeds' summary (mode, iterations, sources_count, adaptive_exit).
"""

from __future__ import annotations

import time
from typing import Any, Optional

from .events import Event

# Token-level events are replayed as their final step event; storing every delta would
# multiply the trace's size by the answer length for no information.
_DELTA_STATUSES = {"reflection_delta", "thought_delta", "action_delta", "observation_delta"}
_REASONING = ("reflection", "thought")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens", "calls")


class TraceRecorder:
    """Feed every event to `add`; read the message fields at the end (complete or not)."""

    def __init__(self, mode: str):
        self.mode = mode
        self.started = time.perf_counter()
        self.first_event_ms: Optional[float] = None
        self.first_token_ms: Optional[float] = None
        self.events: list[Event] = []
        self.steps: dict[int, dict[str, Any]] = {}
        self.answer_parts: list[str] = []
        self.done: Optional[Event] = None
        self.goal: Optional[str] = None
        self.adaptive_exit: Optional[dict[str, Any]] = None
        self.max_iterations_reached = False
        self._usage = dict.fromkeys(_USAGE_KEYS, 0)
        self._last_usage: Optional[dict] = None
        self._last_iteration = 0

    def _elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 1)

    def add(self, event: Event) -> None:
        if self.first_event_ms is None:
            self.first_event_ms = self._elapsed_ms()
        usage = event.get("usage")
        if isinstance(usage, dict) and not event.get("done") and usage is not self._last_usage:
            # Every event after one LLM call carries that call's usage (the same dict), so
            # count each call once.
            self._last_usage = usage
            for key in _USAGE_KEYS:
                self._usage[key] += int(usage.get(key) or 0)
        if event.get("done"):
            self.done = event
            self.goal = event.get("goal") or self.goal
            return
        status = event.get("status")
        if status is None:
            if "delta" in event:
                if self.first_token_ms is None:
                    self.first_token_ms = self._elapsed_ms()
                self.answer_parts.append(str(event["delta"]))
            return
        if status in _DELTA_STATUSES:
            return
        if status == "iteration" and "steps" in event:
            # The steps so far are what this trace folds itself: storing them with every
            # iteration would grow the stored trace quadratically with the iterations.
            event = {k: v for k, v in event.items() if k != "steps"}
        self.events.append(event)
        self._fold_step(status, event)

    def _fold_step(self, status: str, event: Event) -> None:
        iteration = event.get("iteration")
        if isinstance(iteration, int):
            self._last_iteration = max(self._last_iteration, iteration)
        if status == "iteration" and event.get("goal"):
            self.goal = event["goal"]
        step = self.steps.setdefault(iteration or self._last_iteration or 0, {})
        if status in _REASONING and event.get(status):
            step[status] = event[status]
        elif status == "action":
            step["action"] = event.get("action")
            step["param"] = event.get("param")
        elif status == "observation":
            step["observation"] = event.get("result_preview", "")
            if event.get("sources"):
                step["sources"] = event["sources"]
        elif status in ("adaptive_iteration", "adaptive_response") and not self.adaptive_exit:
            # adaptive_iteration names the iteration and why; adaptive_response follows it.
            self.adaptive_exit = {"iteration": event.get("iteration", self._last_iteration),
                                  "reason": event.get("reason")}
        elif status == "max_iterations_reached":
            self.max_iterations_reached = True

    # What the stored message keeps ---------------------------------------------------------
    @property
    def answer(self) -> str:
        if self.done is not None and self.done.get("full_response") is not None:
            return str(self.done["full_response"])
        return "".join(self.answer_parts)

    @property
    def sources(self) -> list[dict[str, Any]]:
        return list(self.done.get("sources") or []) if self.done else []

    @property
    def iterations(self) -> int:
        if self.done is not None and isinstance(self.done.get("iterations"), int):
            return self.done["iterations"]
        return self._last_iteration

    @property
    def usage(self) -> dict[str, int]:
        # The done event's total (if the agent reports one) is authoritative; otherwise the
        # sum of the per-call usages seen so far (all a cancelled run has).
        if self.done is not None and isinstance(self.done.get("usage"), dict):
            return {k: int(self.done["usage"].get(k) or 0) for k in _USAGE_KEYS}
        return dict(self._usage)

    def agent_trace(self) -> dict[str, Any]:
        steps = [{"iteration": i, **s} for i, s in sorted(self.steps.items()) if s]
        return {
            "mode": self.mode,
            "goal": self.goal,
            "iterations": self.iterations,
            "steps": steps,
            "actions": [{"iteration": s["iteration"], "action": s["action"], "param": s["param"]}
                        for s in steps if "action" in s],
            "observations": [{"iteration": s["iteration"], "result_preview": s["observation"]}
                             for s in steps if "observation" in s],
            "adaptive_exit": self.adaptive_exit,
            "max_iterations_reached": self.max_iterations_reached,
            "events": self.events,
        }

    def stream_metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"mode": self.mode, "iterations": self.iterations,
                                "sources_count": len(self.sources)}
        if self.adaptive_exit is not None:
            meta["adaptive_exit"] = self.adaptive_exit
        return meta

    def timings(self) -> dict[str, Optional[float]]:
        return {"first_event_ms": self.first_event_ms, "first_token_ms": self.first_token_ms,
                "total_ms": self._elapsed_ms()}
