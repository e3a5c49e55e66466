"""Actors: what produces the attempts that Reflection critiques and Reflexion evaluates.

Seed 004: the Actor is an LLM whose strategy may be a plain prompt, chain-of-thought or a
ReAct-style agent; Reflexion sits on top of it. Seed 001: Reflection's first attempt comes
from ReAct or Plan-and-Solve. LLMActor (a plain prompt) and AgentActor (any chat mode,
plan-and-solve included) are here; the tool-less ChainOfThoughtActor and PlanAndSolveActor
are in prompt_actors.py. Every actor answers `act(task, lessons, previous)`:
`lessons` are the long-term reflections to apply, `previous` the last trial (its attempt and
how it was judged) as short-term memory. Reflection's first draft is `act(task)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional, Protocol, Sequence

from ..llm.base import ChatModel
from .self_correction import (Attempt, complete, extract_code, prompt, render_sources,
                              resolve_language, usage_of)

Kind = Literal["code", "text"]


@dataclass(slots=True)
class Previous:
    """The last trial, as the actor sees it on a retry."""

    attempt: Attempt
    feedback: str


class Actor(Protocol):
    kind: Kind

    def act(self, task: str, lessons: Sequence[str] = (),
            previous: Optional[Previous] = None) -> Attempt:
        ...


def lessons_block(lessons: Sequence[str], language: str) -> str:
    if not lessons:
        return ""
    items = "\n".join(f"{n}. {text.strip()}" for n, text in enumerate(lessons, start=1))
    return prompt("lessons", language, items=items)


def previous_block(previous: Optional[Previous], language: str) -> str:
    if previous is None:
        return ""
    return prompt("previous", language, attempt=previous.attempt.output.strip(),
                  feedback=previous.feedback.strip() or "-")


def final_answer_of(text: str) -> str:
    """The FINAL ANSWER (or Finish[...]) of a reply; the reply's last line without one."""
    from ..parsing import parse_step

    step = parse_step(text)
    if step.final_answer:
        return step.final_answer
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass
class LLMActor:
    """A single prompt: the code generator of seed 001 (kind="code") or a direct answer.

    strategy "plan-and-solve" asks for a plan first and then the code or the solution with
    its FINAL ANSWER (Plan-and-Solve prompting; see prompt_actors.PlanAndSolveActor)."""

    llm: ChatModel
    kind: Kind = "code"
    language: str = "auto"
    context: str = ""          # extra material for text tasks (e.g. retrieved passages)
    max_tokens: int = 768
    strategy: str = "direct"   # direct | plan-and-solve

    def act(self, task: str, lessons: Sequence[str] = (),
            previous: Optional[Previous] = None) -> Attempt:
        lang = resolve_language(self.language, task)
        fields = dict(task=task.strip(), lessons=lessons_block(lessons, lang),
                      previous=previous_block(previous, lang))
        planned = self.strategy == "plan-and-solve"
        name = f"{'plan_and_solve' if planned else 'draft'}_{self.kind}"
        if self.kind == "code":
            reply = complete(self.llm, prompt(name, lang, **fields), max_tokens=self.max_tokens)
            output = extract_code(reply.text)
        else:
            context = prompt("context", lang, sources=self.context) if self.context else ""
            reply = complete(self.llm, prompt(name, lang, context=context, **fields),
                             max_tokens=self.max_tokens)
            output = final_answer_of(reply.text) if planned else reply.text
        plan: list[str] = []
        if planned:
            from .plan_and_solve import parse_plan
            plan = parse_plan(reply.text.split("```", 1)[0])
        return Attempt(output=output, usage=reply.usage, context=self.context,
                       trajectory=reply.text if planned else output, raw=reply.text, plan=plan)


_EVENT_LINES = {
    "thought": lambda e: f"Thought: {e.get('thought', '')}",
    "reflection": lambda e: f"Reflection: {e.get('reflection', '')}",
    "action": lambda e: f"Action: {e.get('action')}({str(e.get('param', '')).strip()!r})",
    "observation": lambda e: "Observation: " + " ".join(str(e.get("result_preview", "")).split())[:500],
    "plan": lambda e: "Plan: " + " ".join(f"{n}. {s}" for n, s in enumerate(e.get("plan", []), 1)),
    "parse_error": lambda e: f"(unparsable step: {e.get('message', '')})",
    "repeated_action": lambda e: f"(stopped: {e.get('action')} repeated {e.get('count')} times)",
    "max_iterations_reached": lambda e: "(the iteration limit was reached)",
}


def render_steps(steps: Sequence[Any]) -> str:
    """An agent run's trace (RunResult.steps: the run's events) as the text the
    self-reflection prompt reads: reasoning, actions and observations in order."""
    lines = []
    for event in steps:
        if isinstance(event, dict):
            line = _EVENT_LINES.get(str(event.get("status")))
            if line is not None:
                lines.append(line(event).strip())
        elif event is not None:
            lines.append(str(event))
    return "\n".join(lines)


@dataclass
class AgentActor:
    """Any chat mode (act, react, reflact) as the actor: the attempt is the Agent run's
    answer, its sources are the context the reviewer sees. Lessons reach the agent through
    ChatbotSettings.system_prompt, which every mode prepends to its own prompt."""

    llm: Optional[ChatModel] = None
    knowledge: Any = None
    settings: Any = None
    agent_factory: Optional[Callable[..., Any]] = None   # default: agentmodes.Agent
    language: str = "auto"
    kind: Kind = "text"
    history: Optional[list] = field(default=None)
    # True: the attempt is what the model wrote (done["model_answer"]), as the papers'
    # exact-match benchmarks score it; False: the composed answer a user reads.
    model_answer: bool = False

    def _settings_with(self, lessons: Sequence[str], lang: str):
        from ..settings import ChatbotSettings
        settings = self.settings or ChatbotSettings()
        block = lessons_block(lessons, lang).strip()
        if not block:
            return settings
        system = "\n\n".join(p for p in (settings.system_prompt.strip(), block) if p)
        return settings.model_copy(update={"system_prompt": system})

    def act(self, task: str, lessons: Sequence[str] = (),
            previous: Optional[Previous] = None) -> Attempt:
        lang = resolve_language(self.language, task)
        factory = self.agent_factory
        if factory is None:
            from ..agent import Agent
            factory = Agent
        agent = factory(llm=self.llm, knowledge=self.knowledge,
                        settings=self._settings_with(lessons, lang))
        run = agent.run(task, history=self.history) if self.history else agent.run(task)
        sources = list(getattr(run, "sources", None) or [])
        steps = list(getattr(run, "steps", None) or [])
        trajectory = render_steps(steps)
        answer = str(getattr(run, "answer", "") or "")
        if self.model_answer:           # the model's own words, not the composed answer
            answer = str((getattr(run, "done", None) or {}).get("model_answer", answer))
        trajectory = f"{trajectory}\nAnswer: {answer}".strip()
        plan = next((list(e.get("plan") or []) for e in steps
                     if isinstance(e, dict) and e.get("status") == "plan"), [])
        return Attempt(output=answer, usage=usage_of(getattr(run, "usage", None)),
                       context=render_sources(sources), trajectory=trajectory,
                       sources=sources, run=run, plan=plan)
