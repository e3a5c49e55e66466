"""Rule-based evaluators over an agent run, and user callables as evaluators.

Seed 004's second evaluator kind ("规则启发", from ALFWorld) is RuleHeuristic: a trial failed
if the actor executed the same invalid action at the same place more than 3 times in a row,
or took more than 30 steps ("planning was too inefficient"). It reads a trajectory of
(action, location, had_effect) steps, so any environment that reports where the actor is
and whether an action did anything can use it: ALFWorld ("Nothing happened." = no effect),
or the knowledge-base loop, whose observation events carry `effect` (a search that found
nothing new had none) and no location (one place).

RepeatedActionEvaluator and StepLimitEvaluator are looser checks of a KB agent run (any
repeat of a call, the number of actions). All of these read a run, so they receive the run
(anything with `.steps`, e.g. RunResult) as the candidate; `wants_run = True` tells
Reflexion to hand them the run instead of the answer.
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from .base import Evaluation, Evaluator


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def step_action(step: Any) -> Optional[tuple[str, str]]:
    """(tool name, argument) of a step, whatever shape it has: the loop's "action" event
    ({"status": "action", "action": name, "param": argument}) or an object/dict with an
    `action` that has name and argument; None for anything that is not an action."""
    if isinstance(step, dict) and "status" in step and step.get("status") != "action":
        return None                      # an event of the trace that is not an action
    action = _get(step, "action")
    if action is None:
        return None
    if isinstance(action, str):
        argument = _get(step, "param")
        argument = _get(step, "argument") if argument is None else argument
        return (action.strip(), str(argument or "").strip())
    name = _get(action, "name") or _get(action, "tool")
    if not name:
        return None
    argument = _get(action, "argument")
    if argument is None:
        argument = _get(action, "arguments") or _get(action, "query") or ""
    return (str(name).strip(), str(argument).strip())


def run_steps(candidate: Any) -> list[Any]:
    steps = _get(candidate, "steps")
    return list(steps) if steps else []


@dataclass(slots=True)
class RepeatedActionEvaluator:
    """Fails when one (tool, argument) pair occurs more than `max_repeats` times in a run."""

    max_repeats: int = 3
    wants_run = True

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        actions = [a for a in (step_action(s) for s in run_steps(candidate)) if a]
        keys = [(name.lower(), " ".join(arg.lower().split())) for name, arg in actions]
        counts = Counter(keys)
        worst = counts.most_common(1)
        times = worst[0][1] if worst else 0
        if times > self.max_repeats:
            name, arg = actions[keys.index(worst[0][0])]   # as the model first wrote it
            return Evaluation(False, 0.0,
                              f"The same action {name}({arg!r}) was repeated {times} times "
                              f"without progress; try a different action or query.",
                              {"repeated_action": [name, arg], "times": times})
        return Evaluation(True, 1.0, "No action was repeated too often.", {"max_times": times})


@dataclass(slots=True)
class StepLimitEvaluator:
    """Fails when a run took more than `max_steps` steps (planning was too inefficient).
    A step is one action; a trace of events counts its action events."""

    max_steps: int = 30
    wants_run = True

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        steps = run_steps(candidate)
        if any(isinstance(s, dict) and "status" in s for s in steps):
            steps = [s for s in steps if step_action(s)]
        n = len(steps)
        if n > self.max_steps:
            return Evaluation(False, 0.0, f"The run needed {n} steps, more than the limit of "
                              f"{self.max_steps}; plan a shorter path to the answer.", {"steps": n})
        return Evaluation(True, 1.0, f"The run took {n} steps.", {"steps": n})


@dataclass(frozen=True, slots=True)
class EnvStep:
    """One step of a trajectory, as seed 004's heuristic sees it."""

    action: str
    location: Optional[str] = None    # where the actor is; None: the environment has no places
    had_effect: bool = True           # False: an invalid action ("Nothing happened.")


def _env_step(item: Any) -> EnvStep:
    if isinstance(item, EnvStep):
        return item
    if isinstance(item, (tuple, list)):
        action, location, had_effect = (list(item) + [None, True])[:3]
        return EnvStep(str(action), location, bool(had_effect))
    action = _get(item, "action")
    effect = _get(item, "had_effect")
    return EnvStep(str(action or ""), _get(item, "location"),
                   bool(True if effect is None else effect))


def trajectory_of(candidate: Any) -> list[EnvStep]:
    """The (action, location, had_effect) steps of a candidate: a list of EnvSteps, tuples
    or dicts; anything with a `trajectory`; or an agent run whose events pair each action
    with its observation (`effect`, `location`; an error is an action without effect)."""
    if isinstance(candidate, (list, tuple)) and not _is_event_list(candidate):
        return [_env_step(s) for s in candidate]
    trajectory = _get(candidate, "trajectory")
    if isinstance(trajectory, (list, tuple)) and not _is_event_list(trajectory):
        return [_env_step(s) for s in trajectory]
    events = candidate if isinstance(candidate, (list, tuple)) else run_steps(candidate)
    steps: list[EnvStep] = []
    pending: Optional[str] = None
    for event in events:
        status = _get(event, "status")
        if status == "action":
            name, argument = step_action(event) or ("", "")
            pending = f"{name}({argument})" if argument else name
        elif status == "observation" and pending is not None:
            effect = _get(event, "effect")
            if effect is None:
                effect = not _get(event, "error")
            steps.append(EnvStep(pending, _get(event, "location"), bool(effect)))
            pending = None
        elif status == "repeated_action" and pending is not None:
            steps.append(EnvStep(pending, None, False))   # the loop refused to run it again
            pending = None
    return steps


def _is_event_list(items: Any) -> bool:
    return bool(items) and isinstance(items[0], dict) and "status" in items[0]


@dataclass(slots=True)
class RuleHeuristic:
    """Seed 004's ALFWorld heuristic: fail when the same invalid action is executed at the
    same place more than `max_repeats` times in a row, or after more than `max_steps` steps.

    `stuck(steps)` answers the same question during a trial, so an environment can end a
    hopeless trial early instead of running to its limit."""

    max_repeats: int = 3
    max_steps: int = 30
    wants_run = True

    def stuck(self, steps: Iterable[Any]) -> Optional[Evaluation]:
        steps = [_env_step(s) for s in steps]
        run, worst = 0, 0
        where: Optional[EnvStep] = None
        previous: Optional[EnvStep] = None
        for step in steps:
            same = (previous is not None and not step.had_effect and not previous.had_effect
                    and _norm(step.action) == _norm(previous.action)
                    and step.location == previous.location)
            run = run + 1 if same else (0 if step.had_effect else 1)
            if run > worst:
                worst, where = run, step
            previous = step
        if worst > self.max_repeats and where is not None:
            place = f" at {where.location}" if where.location else ""
            return Evaluation(False, 0.0,
                              f"The same invalid action {where.action!r} was executed{place} "
                              f"{worst} times in a row; it had no effect, so do something "
                              f"different there.",
                              {"rule": "repeated_invalid_action", "action": where.action,
                               "location": where.location, "times": worst,
                               "steps": len(steps)})
        if len(steps) > self.max_steps:
            return Evaluation(False, 0.0,
                              f"The trial took {len(steps)} steps, more than {self.max_steps}: "
                              f"the plan was too inefficient; plan a shorter path.",
                              {"rule": "too_many_steps", "steps": len(steps)})
        return None

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        steps = trajectory_of(candidate)
        failed = self.stuck(steps)
        if failed is not None:
            return failed
        return Evaluation(True, 1.0, f"No invalid action was repeated more than "
                          f"{self.max_repeats} times in a row, in {len(steps)} steps.",
                          {"steps": len(steps)})


def _norm(action: str) -> str:
    return " ".join(action.lower().split())


def _answer_of(candidate: Any) -> str:
    if isinstance(candidate, str):
        return candidate
    answer = _get(candidate, "answer")
    return "" if answer is None else str(answer)


@dataclass(slots=True)
class AllOf:
    """Passes when every evaluator passes; feedback of the failed ones, score the minimum.
    Run-reading evaluators get the run, the others its answer text."""

    evaluators: list[Any] = field(default_factory=list)
    wants_run = True

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        results = []
        for ev in self.evaluators:
            arg = candidate if getattr(ev, "wants_run", False) else _answer_of(candidate)
            results.append(ev(task, arg))
        failed = [r for r in results if not r.passed]
        return Evaluation(not failed, min((r.score for r in results), default=1.0),
                          "\n".join(r.feedback for r in failed) or "All checks passed.",
                          {"checks": [r.as_dict() for r in results]})


@dataclass(slots=True)
class CallableEvaluator:
    """Wraps any user function as an Evaluator.

    The function receives (task, candidate) or just (candidate) and returns an Evaluation,
    a bool, a number in 0..1 (passed when >= threshold), or a (passed, feedback) pair.
    An exception inside it is a failed evaluation that says so, not a crashed run.
    """

    fn: Callable[..., Any]
    threshold: float = 1.0
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or getattr(self.fn, "__name__", "evaluator")

    def _call(self, task: Any, candidate: Any) -> Any:
        try:
            params = inspect.signature(self.fn).parameters.values()
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            var = any(p.kind == p.VAR_POSITIONAL for p in params)
            one_arg = len(positional) == 1 and not var
        except (TypeError, ValueError):   # builtins without a signature
            one_arg = False
        return self.fn(candidate) if one_arg else self.fn(task, candidate)

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        try:
            return _as_evaluation(self._call(task, candidate), self.threshold)
        except Exception as err:  # the user's code: report, never crash the loop
            return Evaluation(False, 0.0, f"The evaluator {self.name} raised "
                              f"{type(err).__name__}: {err}", {"error": repr(err)})


def _as_evaluation(out: Any, threshold: float) -> Evaluation:
    if isinstance(out, Evaluation):
        return out
    if isinstance(out, bool):
        return Evaluation(out, 1.0 if out else 0.0, "passed" if out else "failed")
    if isinstance(out, (int, float)):
        score = float(out)
        return Evaluation(score >= threshold, score, f"score {score:.2f}")
    if isinstance(out, tuple) and len(out) == 2:
        passed, feedback = out
        return Evaluation(bool(passed), 1.0 if passed else 0.0, str(feedback))
    raise TypeError(f"an evaluator must return an Evaluation, bool, number or (passed, feedback), "
                    f"got {type(out).__name__}")


def as_evaluator(obj: Any) -> Evaluator:
    """Evaluator instances pass through; other callables are wrapped."""
    if hasattr(obj, "wants_run") or type(obj).__module__.startswith("agentmodes.evaluators"):
        return obj
    if callable(obj):
        return CallableEvaluator(obj)
    raise TypeError(f"not an evaluator: {obj!r}")


def all_of(evaluators: Iterable[Any]) -> AllOf:
    return AllOf([as_evaluator(e) for e in evaluators])
