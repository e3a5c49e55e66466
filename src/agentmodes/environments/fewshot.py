"""The papers' ALFWorld few-shot trajectories, read and re-rendered for each step mode.

`../shared/data/react-prompts/alfworld_3prompts.json` holds the ReAct paper's hand-written
trajectories: three per task type, each in a ReAct version (`react_put_0`: sparse
`> think: ...` lines between the commands) and an action-only version (`act_put_0`). The
ReAct notebook and the Reflexion code prompt with two of them, `<mode>_<type>_1` then
`<mode>_<type>_0`; so do we.

The step loop speaks in labelled steps (THOUGHT / REFLECTION / ACTION, the observation as the
next message), so each trajectory is parsed into turns (thought, command, observation) and
rendered in the mode's labels, actions and observations unchanged:

- ACT: the `act_*` trajectories, `ACTION:` lines only;
- ReAct: the `react_*` trajectories; the think lines before a command become its THOUGHT
  (in the paper a thought is a step of its own, answered "OK.");
- ReflAct: the `react_*` trajectories with a REFLECTION before every command, the ReflAct
  paper's format: the first one is the plan (the paper's first thoughts, as in the ReflAct
  paper's own example), every later one states where the agent is, what it holds and how
  that relates to the goal (reflact_fewshot.py derives it from the trajectory's state).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .alfworld_data import TYPE_NAMES, GameDataError

PROMPTS_FILE = Path("react-prompts") / "alfworld_3prompts.json"
REFLECTIONS_FILE = Path("react-prompts") / "alfworld_reflexion_few_shot_examples.txt"
MODES = ("act", "react", "reflact")
_LABELS = {"react": "THOUGHT", "reflact": "REFLECTION"}
_OK = {"ok.", "ok"}


@dataclass(frozen=True, slots=True)
class Turn:
    thought: str          # the reasoning before the command ("" when there is none)
    command: str
    observation: str


@dataclass(frozen=True, slots=True)
class Trajectory:
    intro: str            # the first observation: the room and "Your task is to: ..."
    turns: tuple[Turn, ...]

    @property
    def task(self) -> str:
        m = re.search(r"Your task is to:\s*(.+)", self.intro)
        return m.group(1).strip().rstrip(".") if m else ""


def parse_trajectory(text: str) -> Trajectory:
    """A paper trajectory (`> command` lines, each followed by its observation) as turns."""
    lines = text.strip("\n").splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith(">")), len(lines))
    intro = "\n".join(lines[:first]).strip()
    items: list[list] = []                           # [command, [observation lines]]
    for line in lines[first:]:
        if line.startswith(">"):
            items.append([line[1:].strip(), []])
        elif items and line.strip():
            items[-1][1].append(line.strip())
    turns: list[list[str]] = []                      # [thought, command, observation]
    pending: list[str] = []
    for command, observed in items:
        if command.lower().startswith("think:"):
            thought = command[len("think:"):].strip()
            rest = [o for o in observed if o.lower() not in _OK]
            if rest and turns and not turns[-1][2]:
                # The paper's cool_0 puts a thought between a command and its observation:
                # the thought belongs before that command, the lines after it to it.
                turns[-1][0] = " ".join(p for p in (turns[-1][0], thought) if p)
                turns[-1][2] = "\n".join(rest)
            else:
                pending.append(thought)
            continue
        if not command:
            continue
        turns.append([" ".join(pending), command, "\n".join(observed)])
        pending = []
    return Trajectory(intro, tuple(Turn(*t) for t in turns))


@lru_cache(maxsize=8)
def _load_json(path: str) -> dict[str, str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GameDataError(f"ALFWorld few-shot prompts not found: {path}") from None
    except (OSError, ValueError) as err:
        raise GameDataError(f"unreadable ALFWorld few-shot prompts {path}: {err}") from err
    if not isinstance(data, dict):
        raise GameDataError(f"{path} is not the ReAct paper's prompt file (a JSON object)")
    return data


class FewShot:
    """The few-shot material of one data folder: trajectories and Reflexion's reflections."""

    def __init__(self, data_dir: str | Path):
        self.data_dir = Path(data_dir)
        self.raw = _load_json(str(self.data_dir / PROMPTS_FILE))

    def trajectory(self, key: str) -> Trajectory:
        if key not in self.raw:
            raise GameDataError(f"few-shot trajectory {key!r} missing from "
                                f"{self.data_dir / PROMPTS_FILE}")
        return parse_trajectory(self.raw[key])

    def examples(self, mode: str, task_type: str) -> list[Trajectory]:
        """The two trajectories the papers prompt with: `<kind>_<type>_1`, `<kind>_<type>_0`."""
        if mode not in MODES:
            raise GameDataError(f"no ALFWorld few-shot prompts for mode {mode!r}")
        if task_type not in TYPE_NAMES:
            raise GameDataError(f"unknown ALFWorld task type {task_type!r}")
        kind = "act" if mode == "act" else "react"
        return [self.trajectory(f"{kind}_{task_type}_{n}") for n in (1, 0)]

    def rendered(self, mode: str, task_type: str) -> str:
        return "\n\n".join(render(t, mode) for t in self.examples(mode, task_type))

    def reflections(self) -> str:
        """Reflexion's two few-shot reflections (a failed trajectory, then `New plan: ...`)."""
        path = self.data_dir / REFLECTIONS_FILE
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise GameDataError(f"Reflexion few-shot reflections not readable: {path} "
                                f"({err})") from err


def render(trajectory: Trajectory, mode: str) -> str:
    """A trajectory in the mode's step labels, as the model is asked to write its own."""
    lines = [trajectory.intro]
    if mode == "reflact":
        from .reflact_fewshot import reflections
        thoughts: list[Optional[str]] = list(reflections(trajectory))
    else:
        thoughts = [t.thought for t in trajectory.turns]
    label = _LABELS.get(mode)
    for turn, thought in zip(trajectory.turns, thoughts):
        if label and thought:
            lines.append(f"{label}: {thought}")
        lines.append(f"ACTION: {turn.command}")
        lines.append(f"OBSERVATION: {turn.observation}")
    return "\n".join(lines)
