"""Run every question in every mode (and, with reflection rounds, each mode's answer
reviewed and refined on top), collecting each run's events and the figures they add up to.

Parallel where the backend allows: an OpenAI-compatible HTTP server takes several requests
at once, so the runs of a question go out together; the in-process llama.cpp model answers
one call at a time (calls are serialised by its lock, and interleaving the modes' prompts
would also throw away its KV-cache prefix reuse), so its runs go one after another. A
backend says which it is with `parallel_calls`; without it, only OpenAICompatModel counts
as parallel.

`mode+reflection` reuses the plain mode's run as Reflection's draft (review_pass.py, the
service's own Reflection pass): the two rows differ by exactly the critique and refinement
calls, so the table shows what Reflection adds on the same draft (seed 001's cost against
its quality gain) rather than two unrelated runs.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ..errors import AgentModesError
from ..events import Event
from ..review_pass import review_answer
from ..settings import ChatbotSettings
from .figures import FigureFold, RunFigures
from .questions import Question
from .scoring import Judge, gold_scores

log = logging.getLogger(__name__)
REFLECTION = "+reflection"
# Token-by-token events are left out of what a record keeps: they repeat the step events
# and the answer, and would multiply a saved comparison's size by the answers' length.
_DELTAS = frozenset({"reflection_delta", "thought_delta", "action_delta", "observation_delta",
                     "plan_delta"})


def parallel_calls(llm: Any) -> bool:
    """Whether `llm` may serve several runs at once (see the module docstring)."""
    explicit = getattr(llm, "parallel_calls", None)
    if explicit is not None:
        return bool(explicit)
    from ..llm.openai_compat import OpenAICompatModel
    return isinstance(llm, OpenAICompatModel)


def variants(modes: Sequence[str], reflection: int) -> list[str]:
    """The rows per question: each mode, then (with reflection rounds) each mode reviewed."""
    return list(modes) + ([m + REFLECTION for m in modes] if reflection else [])


def kept(event: Event) -> bool:
    return not ("delta" in event and event.get("status") in (None, *_DELTAS))


@dataclass(slots=True)
class RunRecord:
    """One row: a question answered in one variant."""

    question: Question
    variant: str
    figures: RunFigures
    scores: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)   # as streamed, token deltas left out

    @property
    def mode(self) -> str:
        return self.variant.split("+", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        q = self.question
        return {"question_index": q.index, "question_id": q.id, "question": q.question,
                "gold": list(q.answers), "variant": self.variant, "mode": self.mode,
                **self.figures.as_dict(), **self.scores}


class Comparison:
    """The modes side by side on a list of questions, over one knowledge base and model."""

    def __init__(self, llm: Any, knowledge: Any, *, modes: Sequence[str],
                 settings: Optional[ChatbotSettings] = None, reflection: int = 0,
                 judge: Optional[Judge] = None, workers: Optional[int] = None,
                 agent_factory: Optional[Callable[..., Any]] = None):
        if not modes:
            raise AgentModesError("no modes to compare")
        self.llm, self.knowledge, self.modes = llm, knowledge, list(modes)
        self.settings = settings or ChatbotSettings()
        self.reflection = reflection
        self.judge = judge
        self.parallel = parallel_calls(llm)
        self.workers = max(1, workers or (len(self.modes) if self.parallel else 1))
        if not self.parallel:
            self.workers = 1
        self.agent_factory = agent_factory
        self.variants = variants(self.modes, reflection)

    def run(self, questions: Sequence[Question],
            on_record: Optional[Callable[[RunRecord], None]] = None) -> list[RunRecord]:
        """Every question in every variant; `on_record` sees each row as it is finished
        (from this thread). Rows come back in question order, then variant order."""
        jobs = [(q, mode) for q in questions for mode in self.modes]
        records: list[RunRecord] = []

        def finished(rows: Iterable[RunRecord]) -> None:
            for row in rows:
                records.append(row)
                if on_record is not None:
                    on_record(row)

        if self.workers == 1:
            for q, mode in jobs:
                finished(self.one(q, mode))
        else:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="compare") as pool:
                futures = [pool.submit(self.one, q, mode) for q, mode in jobs]
                for future in as_completed(futures):
                    finished(future.result())
        order = {v: i for i, v in enumerate(self.variants)}
        return sorted(records, key=lambda r: (r.question.index, order[r.variant]))

    # -- one question in one mode (and its reflection row) ---------------------------------
    def one(self, q: Question, mode: str) -> list[RunRecord]:
        events, error = self._collect(self.events(q.question, mode))
        rows = [self._record(q, mode, events, error)]
        if self.reflection:
            done = events[-1] if events and events[-1].get("done") else None
            review: list[Event] = []
            rerror = error
            if done is not None:
                review, rerror = self._collect(review_answer(
                    self.llm, q.question, done, rounds=self.reflection,
                    language=self.settings.language))
            rows.append(self._record(q, mode + REFLECTION, events[:-1] + review
                                     if done is not None else events, rerror))
        return rows

    def events(self, question: str, mode: str) -> Iterator[Event]:
        """One run's events (Agent.stream), with the chatbot's settings in `mode`."""
        settings = self.settings.model_copy(update={"agent_mode": mode})
        factory = self.agent_factory
        if factory is None:
            from ..agent import Agent
            factory = Agent
        agent = factory(llm=self.llm, knowledge=self.knowledge, settings=settings)
        return agent.stream(question)

    @staticmethod
    def _collect(stream: Iterable[Event]) -> tuple[list[Event], Optional[str]]:
        """The events of a run until its done event; a failure ends the run, not the
        comparison: its message is the row's error."""
        events: list[Event] = []
        try:
            for event in stream:
                if kept(event):
                    events.append(event)
                if event.get("done"):
                    return events, None
            return events, "the run ended without an answer"
        except Exception as err:  # noqa: BLE001 - one failed run must not lose the others
            message = str(err) if isinstance(err, AgentModesError) else \
                f"{type(err).__name__}: {err}"
            log.warning("a compare run failed: %s", message)
            return events, message

    def _record(self, q: Question, variant: str, events: list[Event],
                error: Optional[str]) -> RunRecord:
        fold = FigureFold(variant)
        for event in events:
            fold.add(event)
        figures = fold.figures
        if error:
            figures.error = error
        scores: dict[str, Any] = {}
        if fold.done is not None and not error:
            if q.answers:
                scores = gold_scores(figures.answer, q.answers)
            elif self.judge is not None:
                try:
                    scores = self.judge.judge(q.question, figures.answer,
                                              list(fold.done.get("sources") or [])).as_dict()
                except AgentModesError as err:
                    scores = {"judge_error": str(err)}
        return RunRecord(q, variant, figures, scores, events)
