"""ModeSpec: what distinguishes one step mode (ACT, ReAct, ReflAct) from another.

The loop (loop.py) does everything else; a mode file is one ModeSpec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """What distinguishes one step mode from another."""

    name: str                        # act | react | reflact (also the prompt file name)
    reasoning: Optional[str]         # event name of the reasoning part: reflection | thought
    start_status: str                # event before the model starts: reflecting | getting_action
    reflact_labels: bool = False     # THOUGHT is read as REFLECTION (seed 000)
    goal_in_events: bool = False     # the goal appears in every iteration event
    lists_respond: bool = False      # respond(answer) is how this mode ends (ACT)
    native_tools: bool = False       # use native tool calls when the backend supports them
    # An answer before any search (and without conversation history) is ungrounded: search
    # the question first. Small models otherwise "answer" a document question from nothing.
    search_first: bool = False
    # Splits a reasoning text into named parts for its event (ReflAct's three parts).
    reasoning_parts: Optional[Callable[[str], dict]] = None
    # Characters of the observation in its event's result_preview (seed 002: 200 for ACT,
    # seed 000: 300 for ReflAct).
    preview_chars: int = 300
    # The step format (grammar) when it is another mode's: Plan-and-Solve steps are ReAct's.
    step_format: Optional[str] = None
    # Plan first (Plan-and-Solve): one call writes the plan, each iteration carries out one
    # step of it, and the run answers once every step is done.
    plans: bool = False


# How the seeds write the modes' names in log lines and texts.
LABELS = {"act": "ACT", "react": "ReAct", "reflact": "ReflAct", "plan-and-solve": "Plan-and-Solve"}


def mode_label(mode: str) -> str:
    return LABELS.get(mode, mode)
