"""The prompts of the ALFWorld setting: the papers' assembly, in the loop's step labels.

- system: the mode's instruction (prompts/alfworld/<mode>.md) and the two few-shot
  trajectories of the game's task type (fewshot.py), as the ReAct notebook builds it
  ("Interact with a household to solve a task. Here are two examples." + `_1` + `_0`);
- task message: "Here is the task." and the first observation, preceded, on a Reflexion
  trial, by the memory (the last k plans), as Reflexion's EnvironmentHistory puts it;
- the self-reflection query after a failed trial: Reflexion's structure (two few-shot
  reflections from the shared data, the failed trial in the papers' `> command` notation,
  the plans from past attempts, then "New plan:"), with the evaluator's feedback added
  (seed 004: the self-reflection reads the trajectory and the evaluator's feedback).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Sequence

from .fewshot import FewShot


@lru_cache(maxsize=None)
def template(name: str) -> str:
    return (resources.files("agentmodes") / "prompts" / "alfworld" / f"{name}.md"
            ).read_text("utf-8")


def fill(text: str, **values: str) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def system_prompt(mode: str, task_type: str, fewshot: FewShot) -> str:
    return template(mode).strip() + "\n\n" + fewshot.rendered(mode, task_type)


def memory_block(lessons: Sequence[str]) -> str:
    if not lessons:
        return ""
    trials = "\n".join(f"Trial {n}:\n{text.strip()}" for n, text in enumerate(lessons))
    return fill(template("memory"), TRIALS=trials)


def task_message(observation: str, lessons: Sequence[str] = ()) -> str:
    return fill(template("task"), MEMORY=memory_block(lessons),
                OBSERVATION=observation.strip()).strip()


def transcript(intro: str, steps: Sequence[dict]) -> str:
    """A trial in the papers' notation: reasoning as `> think: ...` / `OK.`, each command
    as `> command` followed by its observation (what the Reflexion prompt's examples show)."""
    lines = [intro.strip()]
    for step in steps:
        reasoning = step.get("thought") or step.get("reflection")
        if reasoning:
            lines += [f"> think: {' '.join(str(reasoning).split())}", "OK."]
        if "param" in step:
            lines += [f"> {step['param']}", str(step.get("observation", ""))]
        elif step.get("parse_error"):
            lines += ["> (unreadable step)", f"({step['parse_error']})"]
    return "\n".join(lines)


def reflection_prompt(fewshot: FewShot, scenario: str, feedback: str = "",
                      past: Sequence[str] = ()) -> str:
    """The self-reflection query for one failed trial (`scenario` from `transcript`)."""
    plans = ""
    if past:
        plans = "\n\nPlans from past attempts:\n" + "\n".join(
            f"Trial #{n}: {text.strip()}" for n, text in enumerate(past))
    note = f"Feedback: {feedback.strip()}" if feedback.strip() else ""
    return fill(template("reflexion"), EXAMPLES=fewshot.reflections(),
                SCENARIO=scenario.strip(), FEEDBACK=note, PAST=plans).strip() + "\n"
