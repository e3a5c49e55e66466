"""The papers' ALFWorld few-shot trajectories re-rendered in the loop's step labels: nothing
of the paper's commands and observations lost, ReAct's thoughts where the paper has them,
ReflAct's reflection before every command; the prompts assembled as the papers do."""

from __future__ import annotations

import re

import pytest

from agentmodes.environments import alfworld_prompts
from agentmodes.environments.alfworld_data import TYPE_NAMES
from agentmodes.environments.fewshot import FewShot, parse_trajectory, render
from agentmodes.environments.reflact_fewshot import parse_goal, reflections

from alfworld_support import needs_data, shared_data

pytestmark = [needs_data]


@pytest.fixture(scope="module")
def fewshot():
    return FewShot(shared_data())


def _commands(raw: str) -> list[str]:
    return [line[1:].strip() for line in raw.splitlines()
            if line.startswith(">") and line[1:].strip()
            and not line[1:].strip().startswith("think:")]


@pytest.mark.parametrize("mode", ["act", "react", "reflact"])
@pytest.mark.parametrize("task_type", TYPE_NAMES)
def test_every_command_and_observation_of_the_paper_survives(fewshot, mode, task_type):
    kind = "act" if mode == "act" else "react"
    for n, trajectory in zip((1, 0), fewshot.examples(mode, task_type)):
        raw = fewshot.raw[f"{kind}_{task_type}_{n}"]
        text = render(trajectory, mode)
        assert re.findall(r"^ACTION: (.+)$", text, re.M) == _commands(raw)
        for turn in trajectory.turns:
            assert turn.observation and turn.observation in raw
            assert not turn.observation.lower().startswith("ok")
        labels = re.findall(r"^(THOUGHT|REFLECTION|ACTION):", text, re.M)
        if mode == "reflact":        # a reflection before every command (ReflAct's format)
            assert labels == ["REFLECTION", "ACTION"] * len(trajectory.turns)
        elif mode == "react":        # the paper's sparse thoughts, each before a command
            assert "REFLECTION" not in labels and labels.count("THOUGHT") >= 2
        else:
            assert set(labels) == {"ACTION"}


def test_react_thoughts_are_the_papers_think_lines(fewshot):
    put = fewshot.trajectory("react_put_0")
    assert put.turns[0].thought.startswith("To solve the task, I need to find and take a sparybottle")
    assert "starting with cabinet 1" in put.turns[0].thought      # two think lines merged
    assert put.turns[0].command == "go to cabinet 1"
    # The paper's cool_0 writes a thought between a command and its observation.
    cool = fewshot.trajectory("react_cool_0")
    take = next(t for t in cool.turns if t.command.startswith("take pan 1"))
    assert take.observation == "You pick up the pan 1 from the stoveburner 3."
    assert take.thought == "Now I find a pan (1). Next, I need to take it."


def test_reflact_reflections_track_the_state_relative_to_the_goal(fewshot):
    clean = fewshot.trajectory("react_clean_0")          # put a clean lettuce in diningtable
    texts = dict(zip((t.command for t in clean.turns), reflections(clean)))
    assert texts["go to fridge 1"].startswith("To solve the task")           # the plan
    assert "it is closed" in texts["open fridge 1"]
    assert "I see lettuce 1 here" in texts["take lettuce 1 from diningtable 1"]
    assert "holding the lettuce 1" in texts["go to sinkbasin 1"]
    assert "still has to be cleaned" in texts["go to sinkbasin 1"]
    assert "so I can clean it here" in texts["clean lettuce 1 with sinkbasin 1"]
    assert "only putting it here remains" in texts["put lettuce 1 in/on diningtable 1"]
    two = fewshot.trajectory("react_puttwo_0")
    after_first = [r for t, r in zip(two.turns, reflections(two)) if "second one" in r]
    assert after_first and all("already put one creditcard" in r for r in after_first)
    examine = fewshot.trajectory("react_examine_1")
    last = list(reflections(examine))[-1]
    assert "desklamp 1" in last and "completes the task" in last


@pytest.mark.parametrize("task, expected", [
    ("put a clean lettuce in diningtable.", ("clean", "lettuce", "diningtable")),
    ("heat some egg and put it in diningtable.", ("heat", "egg", "diningtable")),
    ("put a cool mug in shelf.", ("cool", "mug", "shelf")),
    ("find two pillow and put them in sofa.", ("puttwo", "pillow", "sofa")),
    ("look at bowl under the desklamp.", ("examine", "bowl", "desklamp")),
    ("examine the pen with the desklamp.", ("examine", "pen", "desklamp")),
    ("put some spraybottle on toilet.", ("put", "spraybottle", "toilet")),
])
def test_task_sentences(task, expected):
    goal = parse_goal(task)
    assert (goal.kind, goal.obj, goal.target) == expected


def test_prompts_as_the_papers_assemble_them(fewshot):
    system = alfworld_prompts.system_prompt("react", "heat", fewshot)
    assert system.startswith("Interact with a household to solve a task.")
    # react_heat_1 first, then react_heat_0, as the ReAct notebook concatenates them.
    assert system.index("put a hot apple in fridge") < system.index("heat some egg")
    message = alfworld_prompts.task_message("You are in the middle of a room.\nYour task is to: x.",
                                            ["plan one", "plan two"])
    assert message.index("Trial 0:\nplan one") < message.index("Trial 1:\nplan two") < \
        message.index("Here is the task.")
    query = alfworld_prompts.reflection_prompt(fewshot, "Your task is to: x.\n> look\nNothing.",
                                               "stuck", ["old plan"])
    assert "STATUS: FAIL\nNew plan: I was stuck in a loop" in query      # the few-shot examples
    assert query.rstrip().endswith("New plan:") and "Trial #0: old plan" in query
    assert "Feedback: stuck" in query


def test_a_trajectory_without_commands_is_just_its_intro():
    t = parse_trajectory("You are in a room.\nYour task is to: look.")
    assert t.turns == () and t.task == "look"
