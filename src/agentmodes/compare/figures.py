"""What one run cost and did, read off its event stream (DESIGN: consumers derive nothing
the events do not say, so every figure here adds up with the events).

The loop attaches each LLM call's usage to the events that follow it (the same figures on
several events: action, observation, adaptive exit). A call is therefore counted once, at
the first usage-carrying event after it started: the mode's start status (getting_action,
reflecting, planning: the same rule as telemetry.py). Reflection's critique and refinement
events each carry their own call's usage. What no event attributes, the answer written
after the loop stopped (`final_answer` with a reason) and anything a later stage adds, is
the done event's total minus the attributed calls: `other_calls`/`other_tokens` below.
Totals are always the done event's own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional

from ..events import Event
from ..telemetry import LLM_CALL_STARTS

_REVIEW_CALLS = frozenset({"critique", "refinement"})


@dataclass(slots=True)
class CallUsage:
    """One LLM call: which step it was (iteration number; 0 before the first iteration)."""

    kind: str                 # "step" | "critique" | "refinement"
    iteration: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0


@dataclass(slots=True)
class RunFigures:
    """One (question, variant) run. Field names are the CSV's and --json's columns."""

    mode: str
    iterations: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    wall_s: float = 0.0
    adaptive_exit: bool = False
    max_iterations_reached: bool = False
    parse_errors: int = 0
    repeated_actions: int = 0
    actions: int = 0                      # tool calls the loop ran (respond excluded)
    # Self-correction, as the events show it: an action whose observation changed nothing
    # (a search that found nothing new, a failed or unknown tool: `effect` false), and how
    # often the next action was a different one rather than the same again.
    unproductive_actions: int = 0
    corrections: int = 0
    sources_retrieved: int = 0
    sources_cited: int = 0
    stop_reason: str = "answer"           # "answer" (the model answered) or the loop's reason
    reflection_rounds: int = 0
    reflection_stop: Optional[str] = None
    answer: str = ""                      # what the user reads (the composed answer)
    model_answer: Optional[str] = None    # the model's own, when the composer rewrote it
    calls: list[CallUsage] = field(default_factory=list)
    other_calls: int = 0                  # calls no event attributes (the final answer call)
    other_prompt_tokens: int = 0
    other_completion_tokens: int = 0
    error: Optional[str] = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def step_calls(self) -> list[CallUsage]:
        return [c for c in self.calls if c.kind == "step"]

    def per_step(self) -> dict[str, float]:
        """Mean tokens of one step call (the mode's reasoning and action): what the seeds'
        "Token/Iteration" compares. Prompt tokens include the system prompt and the steps
        so far, which every call sends again (cached_tokens: what a backend reused)."""
        steps = self.step_calls()
        if not steps:
            return {"prompt": 0.0, "completion": 0.0, "total": 0.0}
        prompt = sum(c.prompt_tokens for c in steps) / len(steps)
        completion = sum(c.completion_tokens for c in steps) / len(steps)
        return {"prompt": round(prompt, 1), "completion": round(completion, 1),
                "total": round(prompt + completion, 1)}

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        per = self.per_step()
        out.update(total_tokens=self.total_tokens, prompt_tokens_per_step=per["prompt"],
                   completion_tokens_per_step=per["completion"], tokens_per_step=per["total"])
        return out


class FigureFold:
    """Feed a run's events in order (`add`), then read `figures`. Works on the events as
    streamed or as read back from JSON (no identity tricks)."""

    def __init__(self, mode: str):
        self.figures = RunFigures(mode=mode)
        self._open: Optional[int] = None    # iteration of a started step call not yet counted
        self._iteration = 0
        self.done: Optional[Event] = None
        self._last_action: Optional[tuple] = None
        self._unproductive: Optional[tuple] = None

    def add(self, event: Event) -> None:
        f = self.figures
        if event.get("done"):
            self._finish(event)
            return
        status = event.get("status")
        if "iteration" in event and isinstance(event["iteration"], int) and \
                "round" not in event:
            self._iteration = event["iteration"]
        usage = event.get("usage")
        if status in _REVIEW_CALLS and isinstance(usage, dict):
            f.calls.append(_call(status, int(event.get("round", event.get("iteration", 0))),
                                 usage))
        elif status in LLM_CALL_STARTS:
            self._open = self._iteration
        elif status == "error":
            self._open = None               # the call failed: it has no usage to count
        elif isinstance(usage, dict) and self._open is not None:
            f.calls.append(_call("step", self._iteration, usage))
            self._open = None
        if status == "iteration":
            f.iterations = max(f.iterations, int(event.get("iteration") or 0))
        elif status == "parse_error":
            f.parse_errors += 1
        elif status == "repeated_action":
            f.repeated_actions += 1
        elif status == "adaptive_iteration":
            f.adaptive_exit = True
        elif status == "max_iterations_reached" and "round" not in event:
            f.max_iterations_reached = True
        elif status == "action" and event.get("action") != "respond":
            f.actions += 1
            key = (event.get("action"), " ".join(str(event.get("param", "")).lower().split()))
            if self._unproductive is not None and key != self._unproductive:
                f.corrections += 1
            self._unproductive, self._last_action = None, key
        elif status == "observation" and event.get("effect") is False:
            f.unproductive_actions += 1
            self._unproductive = self._last_action
        elif status == "final_answer" and event.get("reason"):
            f.stop_reason = str(event["reason"])
        elif status == "error" and event.get("fatal"):
            f.error = str(event.get("message") or "error")

    def _finish(self, done: Event) -> None:
        """Totals from the done event; the unattributed remainder is the answer call."""
        f = self.figures
        self.done = done
        usage = done.get("usage") or {}
        f.llm_calls = int(usage.get("calls") or 0)
        f.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        f.completion_tokens = int(usage.get("completion_tokens") or 0)
        f.cached_tokens = int(usage.get("cached_tokens") or 0)
        if isinstance(done.get("iterations"), int):
            f.iterations = done["iterations"]
        f.adaptive_exit = bool(done.get("adaptive_exit", f.adaptive_exit))
        reflection = done.get("reflection") or {}
        f.reflection_rounds = int(reflection.get("rounds") or 0)
        f.reflection_stop = reflection.get("stop_reason")
        f.wall_s = round(float(done.get("elapsed_s") or 0.0)
                         + float(reflection.get("elapsed_s") or 0.0), 3)
        sources = done.get("sources") or []
        f.sources_retrieved = len(sources)
        f.sources_cited = sum(1 for s in sources if isinstance(s, dict) and s.get("cited"))
        f.answer = str(done.get("full_response") or "")
        if done.get("model_answer") is not None:
            f.model_answer = str(done["model_answer"])
        f.other_calls = f.llm_calls - len(f.calls)
        f.other_prompt_tokens = f.prompt_tokens - sum(c.prompt_tokens for c in f.calls)
        f.other_completion_tokens = f.completion_tokens - sum(c.completion_tokens
                                                              for c in f.calls)


def _call(kind: str, iteration: int, usage: dict) -> CallUsage:
    return CallUsage(kind, iteration, int(usage.get("prompt_tokens") or 0),
                     int(usage.get("completion_tokens") or 0),
                     int(usage.get("cached_tokens") or 0))


def figures_of(mode: str, events: Iterable[Event]) -> RunFigures:
    """The figures of a finished run's events (the last one its done event)."""
    fold = FigureFold(mode)
    for event in events:
        fold.add(event)
    return fold.figures
