"""Exact match / token F1 (HotpotQA normalisation), heuristics over runs, user callables."""

from __future__ import annotations

import pytest

from agentmodes.evaluators.base import Evaluation
from agentmodes.evaluators.heuristics import (AllOf, CallableEvaluator, RepeatedActionEvaluator,
                                              StepLimitEvaluator, as_evaluator)
from agentmodes.evaluators.text import (ExactMatchEvaluator, F1Evaluator, exact_match, f1_score,
                                        normalize_answer)


def test_normalisation_matches_the_squad_script():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"
    assert exact_match("the Beatles.", "Beatles")
    assert not exact_match("Beatles and Stones", "Beatles")


def test_token_f1():
    assert f1_score("Gesellschaft mit beschränkter Haftung", "Gesellschaft mit beschränkter Haftung") == 1.0
    assert f1_score("Barack Obama", "Obama") == pytest.approx(2 / 3)
    assert f1_score("completely different", "Obama") == 0.0
    # HotpotQA rule: yes/no only count when exactly right.
    assert f1_score("yes", "no") == 0.0 and f1_score("no it is not", "no") == 0.0
    assert f1_score("yes", "yes") == 1.0


def test_exact_match_evaluator_reads_the_gold_answer_and_hides_it():
    ev = ExactMatchEvaluator()
    ok = ev({"answer": "Bern"}, "bern.")
    assert ok.passed and ok.score == 1.0 and ok.details["f1"] == 1.0
    bad = ev({"answer": "Arthur's Magazine"}, "First for Women")
    assert not bad.passed and bad.score == 0.0
    assert "Arthur" not in bad.feedback           # the lesson must not leak the gold answer
    assert ev({"answers": ["NYC", "New York City"]}, "new york city").passed
    # An agent's citation markers are not part of the answer.
    assert ev({"answer": "Bern"}, "Bern [1]").passed and ev({"answer": "1996"}, "1996 [1, 2]").passed
    assert not ev({"answer": "1996"}, "1996 1").passed
    with pytest.raises(ValueError):
        ev({"question": "?"}, "x")


def test_f1_evaluator_threshold():
    ev = F1Evaluator(threshold=0.6)
    assert ev("the city of Bern", "Bern city").passed
    assert not ev("Bern", "Zurich").passed


def steps(*actions):
    """A run's trace as the agent loop emits it: action events between other events."""
    trace = [{"status": "starting", "mode": "react"}]
    for n, a in actions:
        trace += [{"status": "thought", "thought": "..."},
                  {"status": "action", "action": n, "param": a},
                  {"status": "observation", "result_preview": "..."}]
    return {"steps": trace}


class Run:
    def __init__(self, steps, answer="x"):
        self.steps, self.answer = steps, answer


def test_repeated_action_more_than_three_times_fails():
    ev = RepeatedActionEvaluator()
    three = Run(steps(*[("search", "Creed")] * 3, ("search", "Other"))["steps"])
    four = Run(steps(*[("search", "Creed")] * 4)["steps"])
    assert ev(None, three).passed
    result = ev(None, four)
    assert not result.passed and result.details["times"] == 4 and "Creed" in result.feedback
    # Case and white space of the argument do not make it a different action.
    mixed = Run(steps(("Search", "creed"), ("search", "Creed "), ("search", "CREED"),
                      ("search", "creed"))["steps"])
    assert not ev(None, mixed).passed


def test_step_limit():
    ev = StepLimitEvaluator(max_steps=30)
    assert ev(None, Run(steps(*[("search", str(i)) for i in range(30)])["steps"])).passed
    assert not ev(None, Run(steps(*[("search", str(i)) for i in range(31)])["steps"])).passed
    assert not ev(None, Run([{"action": {"name": "go", "argument": "x"}}] * 31)).passed
    assert ev(None, "no run, just text").passed


def test_user_callables_of_every_shape():
    assert CallableEvaluator(lambda answer: "42" in answer)(None, "it is 42").passed
    assert not CallableEvaluator(lambda task, answer: answer == task)("a", "b").passed
    scored = CallableEvaluator(lambda a: 0.7, threshold=0.5)(None, "x")
    assert scored.passed and scored.score == 0.7
    pair = CallableEvaluator(lambda t, a: (False, "too short"))(None, "x")
    assert not pair.passed and pair.feedback == "too short"
    full = CallableEvaluator(lambda t, a: Evaluation(True, 0.9, "fine"))(None, "x")
    assert full.score == 0.9
    crashed = CallableEvaluator(lambda a: 1 / 0, name="divider")(None, "x")
    assert not crashed.passed and "ZeroDivisionError" in crashed.feedback
    wrong_type = CallableEvaluator(lambda a: "yes")(None, "x")
    assert not wrong_type.passed and "must return" in wrong_type.feedback


def test_all_of_combines_run_and_answer_checks():
    ev = AllOf([RepeatedActionEvaluator(), as_evaluator(lambda a: a == "Bern")])
    good = Run(steps(("search", "a"), ("search", "b"))["steps"], answer="Bern")
    assert ev(None, good).passed
    stuck = Run(steps(*[("search", "a")] * 5)["steps"], answer="Zurich")
    result = ev(None, stuck)
    assert not result.passed and "repeated" in result.feedback and "failed" in result.feedback
    assert as_evaluator(ev) is ev
