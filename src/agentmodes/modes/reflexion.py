"""Reflexion (seed 004; Shinn et al. 2023): trials with an evaluator and verbal lessons.

    for trial in 1..max_trials:
        attempt    = Actor(task, long-term memory, short-term memory)
        evaluation = Evaluator(task, attempt)            stop when it passes
        lesson     = Self-Reflection(task, trajectory, evaluation feedback)
        Memorize(lesson)                                  keep only the newest k = 3

Short-term memory is the trial's own trajectory (the agent's steps, or the previous program
with its test results); long-term memory is the last k lessons, persisted under a task key
(store/memory.py) so that a later run of the same task, in a new process, starts with them.
Why words and not a score: the seed's ablation shows that knowing *that* a trial failed does
not help; the lesson has to say why and what to do next. `verbal=False` is that ablation:
the same trials, evaluator and short-term memory (the last attempt with its feedback, e.g.
the failing self-written tests), but no self-reflection and no lessons
(`bench humaneval --strategy tests-only`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from ..errors import AgentModesError
from ..events import Event, Usage, final_event, status
from ..evaluators.base import Evaluation
from ..evaluators.heuristics import as_evaluator
from ..llm.base import ChatModel
from ..store.memory import DEFAULT_K, InProcessMemory
from .actors import Actor, Previous
from .self_correction import (Attempt, complete, evaluate_attempt, prompt, resolve_language,
                              sources_as_dicts, usage_of)

MAX_REFLECTION_TOKENS = 256


def task_key_for(task: str, namespace: str = "task") -> str:
    """A stable key for a task text (white space does not matter)."""
    digest = hashlib.sha256(" ".join(task.split()).encode("utf-8")).hexdigest()[:20]
    return f"{namespace}:{digest}"


@dataclass(slots=True)
class Trial:
    number: int
    output: str
    evaluation: dict
    reflection: str = ""


@dataclass(slots=True)
class ReflexionResult:
    answer: str
    success: bool
    trials: list[Trial]
    usage: Usage
    elapsed_s: float
    task_key: str
    reflections: list[str] = field(default_factory=list)   # long-term memory at the end
    sources: list[dict] = field(default_factory=list)
    run: Any = None                                        # the final trial's agent run
    runs: list[Any] = field(default_factory=list)          # every trial's agent run


class Reflexion:
    """Actor + Evaluator + Self-Reflection + Memory, until the evaluator passes."""

    def __init__(self, llm: ChatModel, actor: Actor, evaluator: Any, *, max_trials: int = 3,
                 memory: Any = None, k: int = DEFAULT_K, language: str = "auto",
                 reflection_llm: Optional[ChatModel] = None, verbal: bool = True,
                 reflection_prompt: Optional[Callable[[str, Attempt, Evaluation, list[str]],
                                                      str]] = None):
        if max_trials < 1:
            raise AgentModesError(f"max_trials must be >= 1, got {max_trials}")
        if evaluator is None:
            raise AgentModesError("Reflexion needs an evaluator: a test suite, an answer check "
                                  "or a function that judges the attempt")
        self.llm = llm
        self.actor = actor
        self.evaluator = as_evaluator(evaluator)     # a plain function judges too
        self.max_trials = max_trials
        self.memory = memory if memory is not None else InProcessMemory(keep=k)
        self.k = k
        self.language = language
        self.reflector = reflection_llm or llm
        self.verbal = verbal
        # The self-reflection query as a benchmark's paper wrote it (ALFWorld: few-shot
        # reflections, the failed trial, the past plans); default: prompts/selfcorrect.
        self.reflection_prompt = reflection_prompt

    def run(self, task: str, *, eval_task: Any = None, task_key: Optional[str] = None
            ) -> ReflexionResult:
        runs: list[Any] = []
        done = final_event(self.stream(task, eval_task=eval_task, task_key=task_key,
                                       _runs=runs))
        return ReflexionResult(
            answer=done["full_response"], success=done["success"],
            trials=[Trial(**t) for t in done["trials"]], usage=Usage(**done["usage"]),
            elapsed_s=done["elapsed_s"], task_key=done["task_key"],
            reflections=done["reflections"], sources=done["sources"],
            run=runs[-1] if runs else None, runs=runs)

    def _reflection_query(self, task: str, lang: str, attempt: Attempt, evaluation: Evaluation,
                          lessons: list[str]) -> str:
        if self.reflection_prompt is not None:
            return self.reflection_prompt(task, attempt, evaluation, lessons)
        return prompt("self_reflection", lang, task=task.strip(),
                      trajectory=(attempt.trajectory or attempt.output).strip(),
                      feedback=evaluation.feedback.strip() or "The attempt failed.")

    def stream(self, task: str, *, eval_task: Any = None, task_key: Optional[str] = None,
               _runs: Optional[list] = None) -> Iterator[Event]:
        if not task or not task.strip():
            raise AgentModesError("the task is empty; say what the answer or code should do")
        started = time.perf_counter()
        lang = resolve_language(self.language, task)
        key = task_key or task_key_for(task, getattr(self.actor, "kind", "task"))
        judged = eval_task if eval_task is not None else task
        total = Usage()
        lessons = self.memory.load(key, self.k) if self.verbal else []
        yield status("starting", strategy="reflexion", task=task, task_key=key,
                     max_trials=self.max_trials, verbal=self.verbal)
        yield status("memory", task_key=key, reflections=list(lessons), loaded=True)
        trials: list[Trial] = []
        previous: Optional[Previous] = None
        best: Optional[tuple[float, int, Attempt, Evaluation]] = None
        for number in range(1, self.max_trials + 1):
            yield status("trial", trial=number, reflections=list(lessons))
            try:
                attempt = self.actor.act(task, lessons, previous)
            except AgentModesError as err:
                yield status("error", trial=number, message=f"the actor failed: {err}")
                break
            total += attempt.usage
            if _runs is not None:
                _runs.append(attempt.run)
            yield status("draft", trial=number, content=attempt.output,
                         sources=sources_as_dicts(attempt.sources), usage=attempt.usage.as_dict(),
                         **({"plan": attempt.plan} if attempt.plan else {}))
            evaluation = evaluate_attempt(self.evaluator, judged, attempt)
            total += usage_of(evaluation.details.get("usage"))    # an LLM judge's cost
            yield status("evaluation", trial=number, **evaluation.as_dict())
            trial = Trial(number, attempt.output, evaluation.as_dict())
            trials.append(trial)
            if best is None or (evaluation.score, number) >= (best[0], best[1]):
                best = (evaluation.score, number, attempt, evaluation)
            if evaluation.passed:
                break
            if not self.verbal:             # the ablation: retry with the feedback only
                previous = Previous(attempt, evaluation.feedback)
                continue
            # Reflect after every failure, the last one too: the lesson is persisted for the
            # next run of this task even when this run has no trial left.
            try:
                reply = complete(self.reflector, self._reflection_query(
                    task, lang, attempt, evaluation, list(lessons)),
                    max_tokens=MAX_REFLECTION_TOKENS)
            except AgentModesError as err:
                yield status("error", trial=number, message=f"the self-reflection failed: {err}")
                previous = Previous(attempt, evaluation.feedback)
                continue
            total += reply.usage
            trial.reflection = reply.text
            yield status("self_reflection", trial=number, content=reply.text,
                         usage=reply.usage.as_dict())
            self.memory.append(key, reply.text)
            lessons = self.memory.load(key, self.k)
            yield status("memory", task_key=key, reflections=list(lessons), stored=True)
            previous = Previous(attempt, evaluation.feedback)
        if best is None:
            raise AgentModesError("Reflexion produced no attempt: the actor failed on the first trial")
        _, _, chosen, chosen_eval = best
        success = chosen_eval.passed
        yield {"done": True, "full_response": chosen.output,
               "sources": sources_as_dicts(chosen.sources), "goal": task,
               "strategy": "reflexion", "success": success, "iterations": len(trials),
               "stop_reason": "evaluator_passed" if success else "max_trials",
               "trials": [dict(number=t.number, output=t.output, evaluation=t.evaluation,
                               reflection=t.reflection) for t in trials],
               "evaluation": chosen_eval.as_dict(), "task_key": key,
               "reflections": list(lessons), "usage": total.as_dict(),
               "elapsed_s": round(time.perf_counter() - started, 3)}
