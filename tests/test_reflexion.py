"""Reflexion (seed 004) on the scripted model: trials, evaluator stop, lessons in the prompt."""

from __future__ import annotations

import pytest

from agentmodes.errors import AgentModesError
from agentmodes.evaluators.heuristics import CallableEvaluator, RepeatedActionEvaluator
from agentmodes.evaluators.text import ExactMatchEvaluator
from agentmodes.events import final_event
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.modes.actors import AgentActor, LLMActor
from agentmodes.modes.reflexion import Reflexion, task_key_for
from agentmodes.settings import ChatbotSettings
from agentmodes.store.memory import InProcessMemory, ReflexionMemoryStore

TASK = "Write add(a, b) that returns the sum of a and b."
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
LESSON = "I subtracted instead of adding. Next time: use the + operator."


def add_tests(task, code):
    namespace: dict = {}
    exec(code, namespace)   # the scripted model's code is ours; the real runs use the sandbox
    ok = namespace["add"](2, 3) == 5
    return (ok, "assert add(2, 3) == 5 passed" if ok else "assert add(2, 3) == 5 failed: got -1")


def test_trials_until_the_evaluator_passes_and_the_lesson_reaches_the_next_trial():
    llm = ScriptedModel([WRONG, LESSON, RIGHT])
    loop = Reflexion(llm, LLMActor(llm, kind="code"), CallableEvaluator(add_tests), max_trials=4)
    events = list(loop.stream(TASK))
    names = [e.get("status") for e in events if "status" in e]
    assert names == ["starting", "memory", "trial", "draft", "evaluation", "self_reflection",
                     "memory", "trial", "draft", "evaluation"]
    done = events[-1]
    assert done["success"] and done["iterations"] == 2 and "a + b" in done["full_response"]
    assert done["reflections"] == [LESSON]
    # Trial 2's actor prompt carries the lesson (long-term) and the failed code with its test
    # result (short-term); the self-reflection call saw the trajectory and the feedback.
    reflect_prompt, retry_prompt = llm.prompts[1][-1]["content"], llm.prompts[2][-1]["content"]
    assert "return a - b" in reflect_prompt and "got -1" in reflect_prompt
    assert LESSON in retry_prompt and "return a - b" in retry_prompt and "got -1" in retry_prompt
    assert LESSON not in llm.prompts[0][-1]["content"]


def test_stops_at_the_trial_limit_and_reflects_after_the_last_failure():
    llm = ScriptedModel([WRONG, "lesson one", WRONG, "lesson two"])
    memory = InProcessMemory()
    result = Reflexion(llm, LLMActor(llm, kind="code"), CallableEvaluator(add_tests),
                       max_trials=2, memory=memory).run(TASK)
    assert not result.success and len(result.trials) == 2 and len(llm.calls) == 4
    assert result.reflections == ["lesson one", "lesson two"]
    assert [t.reflection for t in result.trials] == ["lesson one", "lesson two"]
    assert result.usage.calls == 4


def test_long_term_memory_keeps_three_and_a_new_run_starts_with_them(tmp_path):
    db = tmp_path / "memory.db"
    store = ReflexionMemoryStore(db)
    replies = []
    for n in range(1, 5):
        replies += [WRONG, f"lesson {n}"]
    llm = ScriptedModel(replies + [WRONG, "lesson 5"])
    loop = Reflexion(llm, LLMActor(llm, kind="code"), CallableEvaluator(add_tests),
                     max_trials=5, memory=store)
    result = loop.run(TASK)
    assert not result.success and len(result.trials) == 5
    # The 5th trial's prompt had only the newest 3 of the 4 lessons.
    fifth = llm.prompts[8][-1]["content"]
    assert "lesson 1" not in fifth and "lesson 2" in fifth and "lesson 4" in fifth
    assert store.load(result.task_key) == ["lesson 3", "lesson 4", "lesson 5"]
    store.close()
    # "Restart": a new store object on the same file, a new loop; the first trial of the
    # next run already carries the persisted lessons.
    llm2 = ScriptedModel([RIGHT])
    store2 = ReflexionMemoryStore(db)
    again = Reflexion(llm2, LLMActor(llm2, kind="code"), CallableEvaluator(add_tests),
                      memory=store2)
    events = list(again.stream(TASK))
    assert events[1]["status"] == "memory" and events[1]["reflections"] == [
        "lesson 3", "lesson 4", "lesson 5"]
    assert "lesson 5" in llm2.prompts[0][-1]["content"] and events[-1]["success"]
    # Another task does not see them.
    assert store2.load(task_key_for("another task", "code")) == []


def test_agent_actor_gets_lessons_through_the_system_prompt():
    # The real Agent (ReAct) on the scripted model: trial 1 answers wrongly, the lesson goes
    # into ChatbotSettings.system_prompt, which the mode prepends on trial 2.
    llm = ScriptedModel([
        "THOUGHT: Zurich is the largest city.\nFINAL ANSWER: Zurich",
        "I answered with the largest city, but the federal city is what was asked. Check "
        "which city hosts the federal government.",
        "THOUGHT: The federal government sits in Bern.\nFINAL ANSWER: Bern",
    ])
    base = ChatbotSettings(agent_mode="react", system_prompt="You are the city guide.")
    loop = Reflexion(llm, AgentActor(llm=llm, settings=base), ExactMatchEvaluator(),
                     max_trials=3)
    result = loop.run("What is the Swiss federal city?", eval_task={"answer": "Bern"})
    assert result.success and result.answer == "Bern" and len(result.trials) == 2
    first_system, second_system = llm.prompts[0][0]["content"], llm.prompts[2][0]["content"]
    assert first_system.startswith("You are the city guide.") and "federal government" not in first_system
    assert second_system.startswith("You are the city guide.")
    assert "hosts the federal government" in second_system and "ReAct" in second_system
    # The self-reflection prompt received the agent's trajectory and the evaluator's verdict.
    reflect_prompt = llm.prompts[1][-1]["content"]
    assert "Thought: Zurich is the largest city." in reflect_prompt
    assert "'Zurich' is not correct" in reflect_prompt
    # Usage of both agent runs and the reflection call is summed.
    assert result.usage.calls == 3 and result.run.answer == "Bern"


def test_run_reading_evaluator_gets_the_agent_run():
    class Run:
        answer, sources, usage = "x", [], None
        steps = [{"status": "iteration", "iteration": 1}] + [
            {"status": "action", "action": "rag_search", "param": "same", "iteration": i}
            for i in range(4)]

    def factory(llm, knowledge, settings):
        return type("A", (), {"run": lambda self, q, **kw: Run()})()

    llm = ScriptedModel(["stop repeating the search"])
    result = Reflexion(llm, AgentActor(llm=llm, agent_factory=factory),
                       RepeatedActionEvaluator(), max_trials=1).run("q")
    assert not result.success
    assert "repeated 4 times" in result.trials[0].evaluation["feedback"]
    assert "Action: rag_search('same')" in llm.prompts[0][-1]["content"]


def test_an_evaluator_is_required_and_a_broken_one_fails_the_trial():
    llm = ScriptedModel([WRONG])
    with pytest.raises(AgentModesError):
        Reflexion(llm, LLMActor(llm), None)

    def broken(task, candidate):
        raise KeyError("boom")

    llm = ScriptedModel([WRONG, "lesson"])
    done = final_event(Reflexion(llm, LLMActor(llm, kind="code"), broken, max_trials=1)
                       .stream(TASK))
    assert not done["success"] and "KeyError" in done["trials"][0]["evaluation"]["feedback"]


def test_the_reviewer_as_judge_for_text_tasks_and_its_cost_counted():
    from agentmodes.modes.reflection import Reviewer

    llm = ScriptedModel([
        "Bern is the capital.",                                              # trial 1
        'It has no capital by law.\n{"verdict": "revise", "issues": ["Switzerland has no de jure capital"]}',
        "Say that Bern is the federal city, not a capital by law.",          # lesson
        "Switzerland has no de jure capital; Bern is the federal city.",     # trial 2
        '{"verdict": "pass", "issues": []}',
    ])
    result = Reflexion(llm, LLMActor(llm, kind="text"), Reviewer(llm), max_trials=3).run(
        "What is the capital of Switzerland?")
    assert result.success and len(result.trials) == 2 and "federal city" in result.answer
    assert result.usage.calls == 5        # the judge's calls are part of the cost
    assert "no de jure capital" in llm.prompts[2][-1]["content"]   # the critique reached the lesson
