"""ReflAct's few-shot reflections, derived from the ReAct paper's ALFWorld trajectories.

The ReflAct paper (Kim et al. 2025) prompts with trajectories in which every action is
preceded by a reflection on the agent's state in relation to the task goal, e.g. "Currently,
I am at cabinet 2 and have found a spraybottle 2, which brings me closer to completing the
task". The shared data holds only the ReAct paper's trajectories (sparse, forward-looking
thoughts), so the ReflAct versions are derived from them here, for all six task types:

- the first reflection is the paper's opening thoughts (the plan and where the object is
  likely to be), as in the ReflAct paper's own example;
- every later one is written from the state the trajectory has reached: the place, what is
  held, what the last observation showed, and what the goal still needs (find, take,
  clean/heat/cool, put, the second object, the desklamp). Where the ReAct thought carries
  search knowledge ("A desklamp is more likely to appear in ..."), it is kept.

This is deterministic text from the trajectory, not a model's output; it shows the model the
format and the kind of state the reflection must track.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from .fewshot import Trajectory

# What each task type must do to the object before placing it (ALFWorld's appliances).
_TRANSFORMS = {"clean": ("clean", "cleaned", "sinkbasin"), "heat": ("heat", "heated", "microwave"),
               "cool": ("cool", "cooled", "fridge")}
_KNOWLEDGE = re.compile(r"(An? \w+ is more likely to appear in .+)$", re.I)


@dataclass(slots=True)
class Goal:
    kind: str                 # put | clean | heat | cool | examine | puttwo
    obj: str
    target: str               # receptacle, or "desklamp" for examine
    text: str


def parse_goal(task: str) -> Goal:
    """The object and target of an ALFWorld task sentence ("put a clean lettuce in
    diningtable", "look at bowl under the desklamp", "find two pillow and put them in sofa")."""
    text = task.strip().rstrip(".")
    low = text.lower()
    m = re.match(r"(?:look at|examine) (?:the |a |an |some )?(\w+) (?:under|with) the (\w+)", low)
    if m:
        return Goal("examine", m[1], m[2], text)
    obj = re.search(r"\b(?:some|a|an|two|the)\s+(?:clean |hot |cool )?(\w+)", low)
    target = re.search(r"\b(?:in|on)\s+(?:the )?(\w+)\s*$", low)
    if not obj or not target:
        raise ValueError(f"not an ALFWorld task sentence: {task!r}")
    kind = "puttwo" if " two " in f" {low} " else next(
        (k for k, words in {"clean": ("clean",), "heat": ("hot", "heat"),
                            "cool": ("cool",)}.items() if any(w in low.split() for w in words)),
        "put")
    return Goal(kind, obj[1], target[1], text)


@dataclass(slots=True)
class _State:
    location: Optional[str] = None
    holding: Optional[str] = None
    transformed: bool = False
    placed: list[str] = field(default_factory=list)
    observation: str = ""
    effect: bool = True


def _advance(state: _State, command: str, observation: str) -> None:
    state.observation, state.effect = observation, observation.strip() != "Nothing happens."
    if not state.effect:
        return
    if m := re.match(r"go to (.+)$", command):
        state.location = m[1]
    elif m := re.match(r"take (.+?) from (.+)$", command):
        state.holding = m[1]
    elif m := re.match(r"put (.+?) in/on (.+)$", command):
        state.placed.append(m[1])
        state.holding, state.transformed = None, False
    elif re.match(r"(clean|heat|cool) .+ with .+$", command):
        state.transformed = True


def _seen(goal: Goal, state: _State, next_command: str) -> Optional[str]:
    """The goal's object in the last observation ("egg 2"), not one already placed; the one
    the trajectory takes next when it shows several."""
    seen = [m[0] for m in re.finditer(rf"\b{re.escape(goal.obj)} \d+\b", state.observation)
            if m[0] not in state.placed and m[0] != state.holding]
    taken = re.match(r"take (.+?) from ", next_command)
    if taken and taken[1] in seen:
        return taken[1]
    return seen[0] if seen else None


def _relation(goal: Goal, state: _State, next_command: str) -> str:
    obs = state.observation
    if not state.effect:
        return "my last action had no effect, so I am no closer to the goal and must try something else."
    if state.holding is None:
        seen = _seen(goal, state, next_command)
        prefix = (f"I have already put one {goal.obj} in/on the {goal.target}, and the task needs "
                  f"a second one; " if goal.kind == "puttwo" and state.placed else "")
        if seen:
            return prefix + f"I see {seen} here, which brings me closer to the goal: I need to take it."
        if re.search(r"\bis closed\b", obs):
            return prefix + f"it is closed, so I cannot yet see whether it holds the {goal.obj} I need."
        if "you see" in obs:
            return prefix + f"there is no {goal.obj} here, so I still have to find one for the goal."
        return prefix + f"I still have to find a {goal.obj} for the goal."
    if goal.kind == "examine":
        lamp = re.search(rf"\b{re.escape(goal.target)} \d+\b", obs)
        if lamp:
            return f"I see {lamp[0]} here; turning it on with the {goal.obj} in hand completes the task."
        return f"the {goal.obj} is in hand, so what remains is to find a {goal.target} and use it."
    step = _TRANSFORMS.get(goal.kind)
    if step and not state.transformed:
        verb, done, appliance = step
        if state.location and state.location.startswith(appliance):
            return (f"I am at the {appliance} with the {goal.obj}, so I can {verb} it here, "
                    f"which the goal needs before it goes in/on the {goal.target}.")
        return (f"the {goal.obj} still has to be {done} with a {appliance} before it goes "
                f"in/on the {goal.target}.")
    ready = f"{step[1]} " if step else ""
    if state.location and state.location.startswith(goal.target):
        return f"I am at the {goal.target} with the {ready}{goal.obj}, so only putting it here remains."
    return f"the {ready}{goal.obj} is ready, so what remains is to put it in/on the {goal.target}."


def _where(state: _State) -> str:
    place = f"at {state.location}" if state.location else "in the middle of the room"
    hold = f"holding the {state.holding}" if state.holding else "not holding anything"
    return f"Currently I am {place}, {hold}"


def reflections(trajectory: Trajectory) -> Iterator[str]:
    """One reflection per turn of the trajectory, each written before that turn's action."""
    goal = parse_goal(trajectory.task)
    state = _State()
    for n, turn in enumerate(trajectory.turns):
        if n == 0:
            yield turn.thought or f"{_where(state)}; to reach the goal, {goal.text}, I start searching."
        else:
            text = f"{_where(state)}, and {_relation(goal, state, turn.command)}"
            knowledge = _KNOWLEDGE.search(turn.thought or "")
            yield f"{text} {knowledge[1]}" if knowledge else text
        _advance(state, turn.command, turn.observation)
