"""Seed 004's ALFWorld rule heuristic: the same invalid action at the same place more than 3
times in a row, or more than 30 steps, fails the trial."""

import pytest

from agentmodes.evaluators.heuristics import EnvStep, RuleHeuristic, trajectory_of

NOTHING = False      # "Nothing happened."


def steps(*items):
    return [EnvStep(*item) for item in items]


def test_four_identical_invalid_actions_in_a_row_at_one_place_fail():
    take = ("take apple 1 from countertop 1", "countertop 1", NOTHING)
    result = RuleHeuristic()(None, steps(("go to countertop 1", "countertop 1", True), *[take] * 4))
    assert not result.passed
    assert result.details["rule"] == "repeated_invalid_action"
    assert result.details["times"] == 4 and result.details["location"] == "countertop 1"
    assert "countertop 1" in result.feedback and "4 times in a row" in result.feedback


def test_three_in_a_row_is_still_allowed():
    take = ("take apple 1 from countertop 1", "countertop 1", NOTHING)
    assert RuleHeuristic()(None, steps(*[take] * 3)).passed


@pytest.mark.parametrize("trajectory", [
    # not in a row: something else happens in between (the old evaluator counted these)
    [("open drawer 1", "drawer 1", NOTHING)] * 2 + [("look", "drawer 1", True)]
    + [("open drawer 1", "drawer 1", NOTHING)] * 2,
    # not the same place
    [("open drawer", f"drawer {n}", NOTHING) for n in range(1, 6)],
    # not invalid: repeating an action that works is not being stuck
    [("examine shelf 1", "shelf 1", True)] * 6,
    # different invalid actions
    [(f"take key {n}", "desk 1", NOTHING) for n in range(6)],
])
def test_what_is_not_the_rule(trajectory):
    assert RuleHeuristic()(None, steps(*trajectory)).passed


def test_more_than_30_steps_fail_and_the_limit_is_a_parameter():
    walk = [(f"go to shelf {n}", f"shelf {n}", True) for n in range(31)]
    result = RuleHeuristic()(None, steps(*walk))
    assert not result.passed and result.details == {"rule": "too_many_steps", "steps": 31}
    assert RuleHeuristic()(None, steps(*walk[:30])).passed
    assert not RuleHeuristic(max_steps=10)(None, steps(*walk[:11])).passed
    assert RuleHeuristic(max_repeats=5)(None, steps(*[("x", "p", False)] * 5)).passed


def test_case_and_spacing_do_not_make_a_different_action():
    odd = [("Open  Drawer 1", "drawer 1", False), ("open drawer 1", "drawer 1", False),
           ("OPEN drawer 1 ", "drawer 1", False), ("open drawer 1", "drawer 1", False)]
    assert not RuleHeuristic()(None, steps(*odd)).passed


def test_stuck_checks_a_trial_in_progress():
    heuristic = RuleHeuristic()
    trial = []
    for n in range(1, 5):
        trial.append(("put mug in sink", "sink 1", False))
        verdict = heuristic.stuck(trial)
        assert (verdict is None) == (n <= 3)


def test_trajectories_in_any_shape():
    as_tuples = [("open fridge 1", "fridge 1", False)] * 4
    as_dicts = [{"action": "open fridge 1", "location": "fridge 1", "had_effect": False}] * 4

    class Run:
        trajectory = as_tuples

    for candidate in (as_tuples, as_dicts, Run()):
        assert not RuleHeuristic()(None, candidate).passed


def test_an_agent_runs_events_are_a_trajectory():
    events = [
        {"status": "iteration", "iteration": 1},
        {"status": "action", "action": "rag_search", "param": "x"},
        {"status": "observation", "result_preview": "[1] ...", "effect": True},
        {"status": "action", "action": "rag_search", "param": "x"},
        {"status": "observation", "result_preview": "[1] ...", "effect": False},
        {"status": "action", "action": "teleport", "param": "y"},
        {"status": "observation", "result_preview": "Unknown tool", "error": True},
        {"status": "action", "action": "go", "param": "north"},
        {"status": "observation", "result_preview": "ok", "location": "hall"},
    ]

    class Run:
        steps = events

    assert trajectory_of(Run()) == [EnvStep("rag_search(x)", None, True),
                                    EnvStep("rag_search(x)", None, False),
                                    EnvStep("teleport(y)", None, False),
                                    EnvStep("go(north)", "hall", True)]


def test_a_real_kb_run_that_repeats_a_fruitless_search_fails_the_heuristic():
    """The loop's own repeat guard is off here, as it is for environments that judge with
    this heuristic: the same search that finds nothing new, four times in a row."""
    from agent_fakes import make_agent

    same = 'REFLECTION: r\nACTION: rag_search("Quantenphysik")'
    agent, _ = make_agent([same] * 5 + ["nichts"], agent_max_iterations=5)
    episode = agent.episode("Was ist Quantenphysik?")
    episode.repeat_limit = None
    events = list(episode.run())
    result = RuleHeuristic()(None, [e for e in events if "status" in e])
    assert not result.passed and result.details["times"] == 5
