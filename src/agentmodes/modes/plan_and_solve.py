"""Plan-and-Solve (Wang et al. 2023) as a step mode: plan first, then carry the plan out.

Plan-and-Solve prompting replaces "Let's think step by step" with "Let's first understand
the problem and devise a plan to solve the problem. Then, let's carry out the plan and solve
the problem step by step." As an agent mode over the documents that is three phases:

1. PLAN: one call writes a numbered plan (at most MAX_PLAN_STEPS steps); `plan` event.
2. Each step in turn: the loop tells the model which step it is on, the model writes a
   THOUGHT and an ACTION (or a FINAL ANSWER when the answer is already clear), the tool's
   observation comes back, and the next step is announced. Every `iteration` event names
   its plan step.
3. When every step has been carried out, the answer is written from the observations
   (the loop's final call, reason "plan_complete").

Seed 001 names Plan-and-Solve as one of the two ways to produce Reflection's first attempt:
`AgentActor` with agent_mode="plan-and-solve" does that over a knowledge base, and
`PlanAndSolveActor` (modes/prompt_actors.py) is the tool-less prompt version for code.
Prompts: prompts/<lang>/plan-and-solve.md (system) and plan_step.md (the announcement).
"""

from __future__ import annotations

import re
from typing import Iterator

from .. import prompts
from ..events import Event
from ..llm.base import GenerationOptions
from ..parsing import SectionRouter
from .spec import ModeSpec

MAX_PLAN_STEPS = 6
PLAN_MAX_TOKENS = 320
_PLAN_LABEL = re.compile(r"(?im)^[ \t#*]*(?:plan|计划)\**[ \t]*[:：][ \t*]*")
_ITEM = re.compile(r"^[ \t]*(?:[-*•][ \t]*|\(?\d{1,2}[.):、][ \t]*|(?:step|schritt|步骤)[ \t]*"
                   r"\d{1,2}[ \t]*[.:：][ \t]*)(?P<text>\S.*?)[ \t]*$", re.IGNORECASE | re.M)
_STEP_LABELS = re.compile(r"(?im)^[ \t*]*(?:THOUGHT|ACTION|FINAL ANSWER|OBSERVATION|SOLUTION)\b")


def parse_plan(text: str) -> list[str]:
    """The steps of a written plan: numbered or bulleted lines after a PLAN: label (or in
    the whole text); unnumbered lines when there are none. Step formats the model wrote by
    mistake (THOUGHT:, ACTION:) end the plan."""
    label = _PLAN_LABEL.search(text or "")
    body = (text or "")[label.end():] if label else (text or "")
    stop = _STEP_LABELS.search(body)
    if stop:
        body = body[:stop.start()]
    steps = [m.group("text") for m in _ITEM.finditer(body)]
    if not steps:
        steps = [line.strip() for line in body.splitlines() if line.strip()]
    unique: list[str] = []
    for step in steps:
        if step not in unique:
            unique.append(step)
    return unique[:MAX_PLAN_STEPS]


def plan_grammar(max_steps: int = MAX_PLAN_STEPS) -> str:
    """GBNF for the plan call: "PLAN:" and 1..max_steps numbered one-line steps."""
    items = " ".join(["item"] + ["item?"] * (max_steps - 1))
    return (f'root ::= "PLAN:" {items}\n'
            'item ::= "\\n" [1-9] ". " line\n'
            'line ::= [^ \\n] [^\\n]{0,159}\n')


def make_plan(episode, grammar: bool) -> Iterator[Event]:
    """The planning call of an episode: plan_delta events, then the plan event. Sets
    episode.plan (a one-step plan, the question itself, if nothing readable came back)."""
    yield {"status": "planning", "iteration": 0}
    options = GenerationOptions(stop=["\nTHOUGHT", "\nACTION", "\nOBSERVATION"],
                                max_tokens=PLAN_MAX_TOKENS,
                                grammar=plan_grammar() if grammar else None)
    router = SectionRouter(initial="reasoning")
    parts: list[str] = []
    usage = None
    for chunk in episode.llm.stream(episode.messages, options):
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.text:
            parts.append(chunk.text)
            for section, piece in router.feed(chunk.text):
                if section == "reasoning":
                    yield {"status": "plan_delta", "delta": piece, "iteration": 0}
    for section, piece in router.feed("", final=True):
        if section == "reasoning":
            yield {"status": "plan_delta", "delta": piece, "iteration": 0}
    episode._count(usage)
    text = "".join(parts).strip()
    steps = parse_plan(text)
    fallback = not steps
    episode.plan = steps or [episode.question]
    episode.messages.append({"role": "assistant", "content": text or "PLAN:\n1. "
                             + episode.question})
    event = {"status": "plan", "plan": list(episode.plan), "usage": episode.last_usage}
    if fallback:
        event["fallback"] = "no readable plan: the question is the only step"
    yield event


def announce_step(episode) -> None:
    """Tell the model which step of the plan to carry out now: appended to the last user
    message (the observation) so the conversation keeps alternating."""
    n = episode.plan_pos
    text = prompts.fill(prompts.load("plan_step", episode.lang), N=str(n + 1),
                        TOTAL=str(len(episode.plan)), STEP=episode.plan[n])
    last = episode.messages[-1]
    if last.get("role") == "user":          # the observation (or the parse-error hint)
        last["content"] = f"{last['content']}\n\n{text}"
    else:
        episode.messages.append({"role": "user", "content": text})


PLAN_AND_SOLVE = ModeSpec(
    name="plan-and-solve",
    reasoning="thought",
    start_status="getting_action",
    search_first=True,              # no answer before the documents were searched
    step_format="react",            # each step is THOUGHT + ACTION | FINAL ANSWER
    plans=True,
)
