"""An optional Reflection pass (seed 001) over a finished chat answer, for any step mode.

The step mode's answer is the draft; an independent reviewer critiques it against the
sources the run found and the answer is refined until the reviewer passes it or the rounds
run out. The events are Reflection's own (critique, refinement, ...), renumbered as
`round` so that they do not mix with the step mode's iterations in the trace.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from .events import Event, Usage
from .modes.reflection import Reflection
from .modes.self_correction import Attempt, render_sources

# The draft is the answer the client has already seen; the review's own stop reason goes
# into the done event, not into the step mode's max_iterations_reached.
_SKIP = {"starting", "draft", "max_iterations_reached"}


class _FinishedAnswer:
    """An actor whose only attempt is the answer the step mode already produced."""

    kind = "text"

    def __init__(self, attempt: Attempt):
        self.attempt = attempt

    def act(self, task: str, lessons: Sequence[str] = (), previous: Any = None) -> Attempt:
        return self.attempt


def review_answer(llm: Any, question: str, done: Event, *, rounds: int,
                  language: str = "auto") -> Iterator[Event]:
    """Yield the review's step events, then the run's done event with the refined answer."""
    sources = list(done.get("sources") or [])
    draft = Attempt(output=str(done.get("full_response") or ""),
                    context=render_sources(sources), sources=sources)
    reflection = Reflection(llm, actor=_FinishedAnswer(draft), kind="text",
                            max_iterations=rounds, language=language)
    for event in reflection.stream(question):
        if event.get("done"):
            total = Usage(**(done.get("usage") or {})) + Usage(**event["usage"])
            yield {**done, "full_response": event["full_response"], "usage": total.as_dict(),
                   "reflection": {"rounds": event["iterations"],
                                  "stop_reason": event["stop_reason"],
                                  "elapsed_s": event["elapsed_s"],
                                  "draft": draft.output}}
            return
        if event.get("status") in _SKIP:
            continue
        event = dict(event)
        if "iteration" in event:
            event["round"] = event.pop("iteration")
        yield event
