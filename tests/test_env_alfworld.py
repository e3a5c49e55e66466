"""ALFWorld against the real game engine (TextWorld's PDDL engine with ALFWorld's wrappers):
the 134 standard games, reset, a valid and an invalid command, a whole game won by a command
sequence derived from the game itself, seed 004's heuristic on a real trajectory, and
Reflexion carrying a lesson from a failed trial into the next."""

from __future__ import annotations

import json

import pytest

from agentmodes.environments.alfworld import ALFWorldEnv
from agentmodes.environments.alfworld_data import TYPE_NAMES, load_games, solvable_games
from agentmodes.environments.fewshot import FewShot
from agentmodes.environments import alfworld_prompts
from agentmodes.evaluators.game import GameEvaluator
from agentmodes.evaluators.heuristics import RuleHeuristic
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.modes.environment import EnvironmentActor, play
from agentmodes.modes.react import REACT
from agentmodes.modes.reflexion import Reflexion
from agentmodes.store.memory import ReflexionMemoryStore

from alfworld_support import games_root, needs_data, needs_engine, shared_data  # noqa: F401

pytestmark = [needs_data]


def test_the_134_standard_games_by_task_type(games_root):
    games = solvable_games(games_root)
    counts = {t: sum(g.task_type == t for g in games) for t in TYPE_NAMES}
    # The ReAct paper's split of valid_unseen (Table 3 rows are fractions of these).
    assert counts == {"put": 24, "clean": 31, "heat": 23, "cool": 21, "examine": 18, "puttwo": 17}
    # The same 134 games the Reflexion/ExpeL runs list (their own file in the shared data).
    listed = json.loads((shared_data() / "alfworld" / "alfworld_tasks_suffix.json").read_text())
    assert {"/".join(x["gamefile"].split("/")[-3:-1]) for x in listed} == {g.name for g in games}
    # --limit samples every type: the order is round-robin over the types.
    assert [g.task_type for g in load_games(shared_data(), cache_dir=games_root, limit=6)] == \
        list(TYPE_NAMES)


@pytest.fixture(scope="module")
def cool_game(games_root):
    return load_games(shared_data(), cache_dir=games_root, task_types=["cool"], limit=1)[0]


@pytest.fixture(scope="module")
def env(cool_game):
    with ALFWorldEnv(cool_game.path) as env:
        yield env


@pytest.fixture(scope="module")
def plan(env):
    """A winning command sequence derived from the game: its PDDL planner's solution."""
    return env.walkthrough()


@needs_engine
@pytest.mark.slow
def test_reset_a_valid_and_an_invalid_command(env):
    obs = env.reset()
    assert obs.startswith("You are in the middle of a room.") and "Welcome" not in obs
    assert "Your task is to: put a cool bread in countertop." in obs
    assert env.task == "put a cool bread in countertop." and env.task_type == "cool"
    assert "go to fridge 1" in env.admissible_actions()

    obs, done, won = env.step("go to fridge 1")
    assert obs == "The fridge 1 is closed." and (done, won) == (False, False)   # no "loc 12"
    assert env.location == "fridge 1"
    t = env.act("open fridge 1")
    assert t.effect and t.observation.startswith("You open the fridge 1.")
    assert "close fridge 1" in t.admissible

    t = env.act("fly to the moon")
    assert (t.observation, t.effect, t.done, t.location) == ("Nothing happens.", False, False,
                                                              "fridge 1")
    # The ReAct paper's thinking step is answered without reaching the game.
    assert env.act("think: where is the bread?").observation == "OK."
    assert env.steps == 3


@needs_engine
@pytest.mark.slow
def test_a_whole_game_won_by_the_games_own_plan(env, plan):
    assert 3 <= len(plan) <= 20 and any(c.startswith("cool ") for c in plan)
    env.reset()
    for command in plan[:-1]:
        obs, done, won = env.step(command)
        assert obs != "Nothing happens." and not done and not won, command
    obs, done, won = env.step(plan[-1])
    assert done and won and obs.startswith("You put the bread")
    # A second game from its start: reset really restarts it.
    assert env.reset().startswith("You are in the middle of a room.")
    assert env.step(plan[0])[1:] == (False, False)


def _fewshot():
    return FewShot(shared_data())


@needs_engine
@pytest.mark.slow
def test_the_heuristic_fires_on_a_real_trajectory(env):
    """Four times the same impossible command at the start: the game answers "Nothing
    happens." each time, the rule of seed 004 ends the trial and says where and what."""
    llm = ScriptedModel(["THOUGHT: The bread must be here.\nACTION: take bread 1 from countertop 1"]
                        + ["ACTION: take bread 1 from countertop 1"] * 3
                        + ["ACTION: go to countertop 3"])
    run = play(REACT, llm, env, system=alfworld_prompts.system_prompt("react", "cool", _fewshot()),
               stop_rule=RuleHeuristic().stuck)
    assert run.outcome == "stuck" and not run.won and run.env_steps == 4 and len(llm.calls) == 4
    assert [s["observation"] for s in run.steps] == ["Nothing happens."] * 4
    verdict = GameEvaluator()(env.task, run)
    assert not verdict.passed and verdict.details["rule"] == "repeated_invalid_action"
    assert verdict.details["times"] == 4 and verdict.details["location"] == "the middle of the room"
    # The heuristic on its own reads the same real trajectory.
    assert not RuleHeuristic()(None, run).passed
    # Three times is still allowed: without the fourth the rule does not fire.
    assert RuleHeuristic().stuck(run.trajectory[:3]) is None


@needs_engine
@pytest.mark.slow
def test_reflexion_carries_the_lesson_into_the_next_trial(env, plan, tmp_path):
    lesson = "I tried to take the bread from where I stood. Next time: go to countertop 3 first."
    llm = ScriptedModel(["ACTION: take bread 1 from countertop 1"] * 4 + [lesson]
                        + [f"ACTION: {c}" for c in plan])
    fewshot = _fewshot()
    actor = EnvironmentActor(llm, REACT, env,
                             system=alfworld_prompts.system_prompt("react", "cool", fewshot),
                             stop_rule=RuleHeuristic().stuck)
    memory = ReflexionMemoryStore(tmp_path / "memory.db")
    reflexion = Reflexion(llm, actor, GameEvaluator(), max_trials=3, memory=memory,
                          reflection_prompt=lambda task, attempt, ev, past:
                          alfworld_prompts.reflection_prompt(fewshot, attempt.trajectory,
                                                             ev.feedback, past))
    result = reflexion.run(env.task, task_key="alfworld:test:cool")
    assert result.success and [t.evaluation["passed"] for t in result.trials] == [False, True]
    assert result.trials[0].reflection == lesson
    # The self-reflection read the failed trial in the papers' notation, the evaluator's
    # feedback and the few-shot reflections of the shared data.
    query = llm.prompts[4][-1]["content"]
    assert "> take bread 1 from countertop 1\nNothing happens." in query
    assert "4 times in a row" in query and "STATUS: FAIL" in query and "New plan:" in query
    # Trial 2's first prompt carries the lesson as memory, before the task.
    task_message = llm.prompts[5][1]["content"]
    assert task_message.index(lesson) < task_message.index("Here is the task.")
    assert "Trial 0:" in task_message
    # The memory is persisted: a new process starts with it.
    assert ReflexionMemoryStore(tmp_path / "memory.db").load("alfworld:test:cool") == [lesson]
