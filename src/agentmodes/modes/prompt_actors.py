"""Tool-less actors with a reasoning strategy: chain-of-thought and Plan-and-Solve.

Seed 004: Reflexion's Actor "is an LLM whose strategy can be CoT or ReAct"; the paper's
HotpotQA runs with the gold context use CoT (the supporting paragraphs are given, no search:
only the reasoning is tested, 61% -> 75% with Reflexion). Seed 001: Reflection's first
attempt comes from ReAct or Plan-and-Solve. The agent versions of ReAct and Plan-and-Solve
are AgentActor(agent_mode=...); these two are their prompt-only counterparts:

- ChainOfThoughtActor: THOUGHT (step by step, over the given context) then FINAL ANSWER;
  the attempt is the answer, its trajectory the reasoning (what Self-Reflection reads).
- PlanAndSolveActor: "Let's first understand the problem and devise a plan ... then carry
  out the plan" (Wang et al. 2023): a PLAN, then the code (kind="code") or the solution and
  FINAL ANSWER (kind="text").

On a backend that enforces grammars, the CoT reply is constrained to the ReAct step format
without tools (THOUGHT line, FINAL ANSWER line), so the embedded model always answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..llm.base import ChatModel
from .actors import Kind, LLMActor, Previous, final_answer_of, lessons_block, previous_block
from .self_correction import Attempt, complete, prompt, resolve_language

_CONTEXT_LABEL = {"en": "Context:", "de": "Kontext:", "zh": "上下文："}


def _cot_grammar(llm: ChatModel) -> Optional[str]:
    if not getattr(llm, "supports_grammar", False):
        return None
    from ..llm.grammars import step_grammar
    return step_grammar("react", [])


@dataclass
class ChainOfThoughtActor:
    """Reason over the given context, then answer; no tools (seed 004's CoT actor)."""

    llm: ChatModel
    context: str = ""              # e.g. HotpotQA's gold supporting paragraphs
    instructions: str = ""         # e.g. "answer with the shortest possible answer"
    language: str = "auto"
    max_tokens: int = 384
    kind: Kind = "text"

    def act(self, task: str, lessons: Sequence[str] = (),
            previous: Optional[Previous] = None) -> Attempt:
        lang = resolve_language(self.language, task)
        context = f"\n{_CONTEXT_LABEL.get(lang, 'Context:')}\n{self.context.strip()}\n" \
            if self.context.strip() else ""
        instructions = f"\n{self.instructions.strip()}\n" if self.instructions.strip() else ""
        reply = complete(self.llm, prompt("cot", lang, task=task.strip(), context=context,
                                          instructions=instructions,
                                          lessons=lessons_block(lessons, lang),
                                          previous=previous_block(previous, lang)),
                         max_tokens=self.max_tokens, grammar=_cot_grammar(self.llm))
        return Attempt(output=final_answer_of(reply.text), usage=reply.usage, context=self.context,
                       trajectory=reply.text, raw=reply.text)


@dataclass
class PlanAndSolveActor(LLMActor):
    """Plan first, then carry the plan out, in one prompt (Plan-and-Solve prompting)."""

    strategy: str = "plan-and-solve"
