"""Reflection (seed 001) on the scripted model: verdict stop, limit stop, prompts, wrapping."""

from __future__ import annotations

import pytest

from agentmodes.errors import AgentModesError, LLMError
from agentmodes.evaluators.base import Evaluation
from agentmodes.events import final_event
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.modes.actors import AgentActor
from agentmodes.modes.memory import Memory
from agentmodes.modes.reflection import Reflection, parse_verdict
from agentmodes.tools.base import Source

TASK = "Write a function primes_up_to(n) that returns all primes in [1, n]."
TRIAL_DIVISION = ("```python\ndef primes_up_to(n):\n    \"\"\"Primes by trial division.\"\"\"\n"
                  "    return [k for k in range(2, n + 1)\n"
                  "            if all(k % d for d in range(2, int(k ** 0.5) + 1))]\n```")
SIEVE = ("Here is the faster version:\n```python\ndef primes_up_to(n):\n    \"\"\"Sieve.\"\"\"\n"
         "    if n < 2:\n        return []\n    is_p = [True] * (n + 1)\n"
         "    is_p[0] = is_p[1] = False\n    for i in range(2, int(n ** 0.5) + 1):\n"
         "        if is_p[i]:\n            is_p[i*i::i] = [False] * len(is_p[i*i::i])\n"
         "    return [i for i, p in enumerate(is_p) if p]\n```")
REVISE = ('Trial division costs O(n*sqrt(n)); use the sieve of Eratosthenes.\n'
          '{"verdict": "revise", "issues": ["use a sieve instead of trial division"]}')
PASS = 'The sieve is O(n log log n); nothing important is left.\n{"verdict": "pass", "issues": []}'


def events_of(loop, task=TASK, **kw):
    return list(loop.stream(task, **kw))


def test_stops_when_the_reviewer_passes():
    llm = ScriptedModel([TRIAL_DIVISION, REVISE, SIEVE, PASS])
    events = events_of(Reflection(llm, max_iterations=5))
    names = [e.get("status") for e in events if "status" in e]
    assert names == ["starting", "draft", "critique", "refinement", "critique"]
    done = events[-1]
    assert done["done"] and done["stop_reason"] == "verdict" and done["iterations"] == 1
    assert "is_p[i*i::i]" in done["full_response"] and "Here is" not in done["full_response"]
    assert done["usage"]["calls"] == 4 and len(llm.calls) == 4
    # The refiner saw the task, the last code and the reviewer's critique.
    refine_prompt = llm.prompts[2][-1]["content"]
    assert "primes_up_to" in refine_prompt and "range(2, int(k ** 0.5)" in refine_prompt
    assert "sieve of Eratosthenes" in refine_prompt
    # The reviewer is an independent role with a focus, not the author.
    review_prompt = llm.prompts[1][-1]["content"]
    assert "independent" in review_prompt and "efficiency" in review_prompt
    assert "Earlier rounds" not in review_prompt
    # The second review sees the earlier round (memory trajectory) to check the fix.
    second_review = llm.prompts[3][-1]["content"]
    assert "Earlier rounds" in second_review and "Previous attempt" in second_review
    assert "range(2, int(k ** 0.5)" in second_review and "sieve of Eratosthenes" in second_review
    assert second_review.index("Earlier rounds") < second_review.index("is_p[i*i::i]")


def test_stops_at_the_iteration_limit_and_keeps_the_last_refinement():
    llm = ScriptedModel([TRIAL_DIVISION, REVISE, SIEVE, REVISE, SIEVE.replace("Sieve.", "v3")])
    done = final_event(Reflection(llm, max_iterations=2).stream(TASK))
    assert done["stop_reason"] == "max_iterations" and done["iterations"] == 2
    assert '"""v3"""' in done["full_response"]
    assert len(llm.calls) == 5 and len(done["attempts"]) == 3 and len(done["critiques"]) == 2


def test_a_pass_written_in_prose_only_is_not_a_pass():
    # The seed's substring check would stop on a quoted phrase; the JSON verdict decides.
    sneaky = 'You might think "no improvement needed", but: {"verdict": "revise", "issues": ["x"]}'
    llm = ScriptedModel([TRIAL_DIVISION, sneaky, SIEVE])
    done = final_event(Reflection(llm, max_iterations=1).stream(TASK))
    assert done["stop_reason"] == "max_iterations" and done["iterations"] == 1


@pytest.mark.parametrize("text,verdict,issues", [
    ('```json\n{"verdict": "PASS", "issues": []}\n```', "pass", []),
    ('Problems.\n{"issues": ["slow loop"], "verdict": "revise"}', "revise", ["slow loop"]),
    ('Looks fine.\nVerdict: pass', "pass", []),
    ('{"verdict": "approved"}', "pass", []),
    ('I have no opinion.', None, []),
])
def test_parse_verdict_is_tolerant(text, verdict, issues):
    parsed = parse_verdict(text)
    assert parsed.verdict == verdict and parsed.issues == issues


def primes_tests(task, code):
    """A stand-in test suite: passes only the trial-division draft."""
    ok = "range(2, n + 1)" in code
    return Evaluation(ok, 1.0 if ok else 0.0,
                      "all tests passed" if ok else "assert primes_up_to(10) == [2, 3, 5, 7] failed")


def test_passing_tests_and_a_pass_verdict_stop_at_once():
    llm = ScriptedModel([TRIAL_DIVISION, PASS])
    events = events_of(Reflection(llm, max_iterations=2, evaluator=primes_tests))
    assert [e["status"] for e in events if "status" in e] == [
        "starting", "draft", "evaluation", "critique"]
    assert events[-1]["stop_reason"] == "verdict" and events[-1]["iterations"] == 0
    # The reviewer saw the test results next to the code.
    assert "all tests passed" in llm.prompts[1][-1]["content"]


def test_failing_tests_override_a_pass_and_the_best_attempt_wins():
    broken = "```python\ndef primes_up_to(n):\n    return []\n```"
    llm = ScriptedModel([broken, PASS, TRIAL_DIVISION, REVISE,
                         "```python\ndef primes_up_to(n):\n    return [2]\n```"])
    done = final_event(Reflection(llm, max_iterations=2, evaluator=primes_tests).stream(TASK))
    assert done["stop_reason"] == "max_iterations"
    assert "The tests still fail" in done["critiques"][0]
    # The first refinement passed its tests; the later broken one did not replace it.
    assert "range(2, n + 1)" in done["full_response"]
    assert done["evaluation"]["passed"] is True
    assert len(done["attempts"]) == 3


def test_text_answers_and_wrapping_an_agent_run():
    class FakeRun:
        answer = "The office opens at 9."
        sources = [Source(title="Kontakt", source="kontakt.md", text="Open Mon-Fri 8:00-17:00")]
        steps = []
        usage = None

    made = []

    def factory(llm, knowledge, settings):
        made.append(settings)
        return type("A", (), {"run": lambda self, q, **kw: FakeRun()})()

    llm = ScriptedModel(['The source says 8:00, not 9.\n{"verdict": "revise", "issues": '
                         '["opening time contradicts the source"]}',
                         "The office opens at 8:00 [1].", PASS])
    loop = Reflection(llm, AgentActor(llm=llm, agent_factory=factory), max_iterations=3)
    result = loop.run("When does the office open?")
    assert result.answer == "The office opens at 8:00 [1]."
    assert result.stop_reason == "verdict" and result.iterations == 1
    assert result.sources and result.sources[0]["title"] == "Kontakt"
    # The reviewer and the refiner saw the agent's sources as context.
    assert "Open Mon-Fri 8:00-17:00" in llm.prompts[0][-1]["content"]
    assert "Open Mon-Fri 8:00-17:00" in llm.prompts[1][-1]["content"]


def test_german_task_gets_german_prompts():
    llm = ScriptedModel(["```python\ndef f():\n    pass\n```", PASS])
    final_event(Reflection(llm, max_iterations=1).stream(
        "Schreibe eine Funktion, die die Primzahlen bis n für die Liste zurückgibt."))
    assert "Anforderung" in llm.prompts[0][-1]["content"]
    assert "Prüfer" in llm.prompts[1][-1]["content"]


def test_llm_failure_keeps_the_work_done_so_far():
    llm = ScriptedModel([TRIAL_DIVISION, REVISE])   # the refinement call finds no reply
    events = events_of(Reflection(llm, max_iterations=3))
    assert any(e.get("status") == "error" for e in events)
    done = events[-1]
    assert done["stop_reason"] == "error" and "range(2, int(k ** 0.5)" in done["full_response"]


def test_empty_task_is_a_clear_error():
    with pytest.raises(AgentModesError):
        Reflection(ScriptedModel([])).run("   ")
    with pytest.raises(LLMError):
        Reflection(ScriptedModel([])).run("do something")


def test_memory_renders_the_trajectory():
    memory = Memory()
    memory.add_record("execution", "v1")
    memory.add_record("reflection", "too slow")
    memory.add_record("execution", "v2")
    assert memory.get_last_execution() == "v2"
    assert memory.get_trajectory(1, before=2) == "--- Reviewer feedback ---\ntoo slow"
    assert memory.get_trajectory(0) == ""
    text = memory.get_trajectory()
    assert text.index("v1") < text.index("too slow") < text.index("v2")
    assert "--- Reviewer feedback ---\ntoo slow" in text
    with pytest.raises(ValueError):
        memory.add_record("excution", "typo")
    assert Memory().get_last_execution() is None


@pytest.mark.slow
@pytest.mark.llm
def test_embedded_model_reviewer_always_gives_a_verdict():
    """On the real 135M model the GBNF grammar makes every critique a parsable verdict."""
    pytest.importorskip("llama_cpp")
    from agentmodes.llm.registry import load_llm

    events = list(Reflection(load_llm("local"), max_iterations=1, max_tokens=200).stream(
        "Write a Python function is_even(n) that returns True for even numbers."))
    critique = next(e for e in events if e.get("status") == "critique")
    assert critique["verdict"] in ("pass", "revise")
    done = events[-1]
    assert done["done"] and "def is_even" in done["attempts"][0]
    assert done["usage"]["calls"] in (2, 3) and done["usage"]["completion_tokens"] > 0
