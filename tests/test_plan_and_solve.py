"""Plan-and-Solve (Wang et al. 2023): the mode on its own, and the tool-less actors
(Plan-and-Solve for Reflection's first attempt, chain-of-thought for Reflexion)."""

from __future__ import annotations

import json

import pytest

from agentmodes.events import final_event
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.modes.actors import AgentActor
from agentmodes.modes.plan_and_solve import parse_plan, plan_grammar
from agentmodes.modes.prompt_actors import ChainOfThoughtActor, PlanAndSolveActor
from agentmodes.modes.reflection import Reflection
from agentmodes.modes.reflexion import Reflexion
from agentmodes.evaluators.text import ExactMatchEvaluator
from agentmodes.settings import ChatbotSettings

from agent_fakes import FakeKB, check_well_formed, done_of, make_agent, statuses
from test_modes import compact

Q = "Wann hat die DG Agentur geöffnet und wie erreiche ich sie?"
PLAN = "PLAN:\n1. Öffnungszeiten suchen\n2. Telefonnummer suchen"


def test_plan_first_then_each_step_with_the_tools_then_the_answer():
    kb = FakeKB()
    agent, model = make_agent([PLAN, 'THOUGHT: Schritt 1\nACTION: rag_search("Öffnungszeiten")',
                               'THOUGHT: Schritt 2\nACTION: rag_search("Telefon")',
                               "Mo-Fr 9-18 Uhr [1], Tel +49 911 97554990 [2]"],
                              agent_mode="plan-and-solve", kb=kb)
    events = list(agent.stream(Q))
    check_well_formed(events)
    assert compact(events) == [
        "starting", "planning", "plan_delta", "plan",
        "iteration", "getting_action", "thought_delta", "thought", "action_delta", "action",
        "observation_delta", "observation",
        "iteration", "getting_action", "thought_delta", "thought", "action_delta", "action",
        "observation_delta", "observation", "final_answer", "delta", "done"]
    plan = next(e for e in events if e.get("status") == "plan")
    assert plan["plan"] == ["Öffnungszeiten suchen", "Telefonnummer suchen"]
    assert plan["usage"]["calls"] == 1
    iterations = [e for e in events if e.get("status") == "iteration"]
    assert [(e["plan_step"], e["plan_text"]) for e in iterations] == [
        (1, "Öffnungszeiten suchen"), (2, "Telefonnummer suchen")]
    assert kb.queries == [("Öffnungszeiten", "hybrid"), ("Telefon", "hybrid")]
    final = next(e for e in events if e.get("status") == "final_answer")
    assert final["reason"] == "plan_complete"
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1], Tel +49 911 97554990 [2]"
    # what the model saw: the plan prompt, then each step announced (after the observation)
    system = model.calls[0]["messages"][0]["content"]
    assert system.startswith("Du bist ein Plan-and-Solve-Agent.") and "PLAN:" in system
    step1 = model.calls[1]["messages"][-1]["content"]
    assert step1.startswith("Führe Schritt 1 von 2 deines Plans aus: Öffnungszeiten suchen")
    step2 = model.calls[2]["messages"][-1]["content"]
    assert step2.startswith("OBSERVATION: [1] Kontakt") and \
        "Führe Schritt 2 von 2 deines Plans aus: Telefonnummer suchen" in step2


def test_a_final_answer_at_any_step_ends_the_run():
    agent, model = make_agent([PLAN, 'THOUGHT: 1\nACTION: rag_search("Öffnungszeiten")',
                               "THOUGHT: steht fest\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"],
                              agent_mode="plan-and-solve")
    events = list(agent.stream(Q))
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]" and len(model.calls) == 3


def test_an_unreadable_plan_falls_back_to_the_question_as_the_only_step():
    agent, _ = make_agent(["", 'THOUGHT: x\nACTION: rag_search("Öffnungszeiten")', "Mo-Fr [1]"],
                          agent_mode="plan-and-solve", language="en")
    events = list(agent.stream("When is DG Agentur open?"))
    plan = next(e for e in events if e.get("status") == "plan")
    assert plan["plan"] == ["When is DG Agentur open?"] and "fallback" in plan
    assert done_of(events)["full_response"] == "Mo-Fr [1]"


def test_a_plan_longer_than_the_budget_stops_at_the_limit():
    plan = "PLAN:\n" + "\n".join(f"{n}. Suche {n}" for n in range(1, 6))
    replies = [plan] + [f'THOUGHT: {n}\nACTION: rag_search("Suche {n}")' for n in range(1, 4)]
    agent, _ = make_agent(replies + ["Antwort [1]"], agent_mode="plan-and-solve",
                          agent_max_iterations=3)
    events = list(agent.stream(Q))
    assert statuses(events).count("iteration") == 3
    assert "max_iterations_reached" in statuses(events)


@pytest.mark.parametrize("text, steps", [
    ("PLAN:\n1. a\n2. b", ["a", "b"]),
    ("Here is my plan:\n\n1) search hours\n2) search phone\n\nTHOUGHT: go", ["search hours",
                                                                          "search phone"]),
    ("**Plan:**\n- first\n- second\n- first", ["first", "second"]),
    ("Step 1: look up X\nStep 2: look up Y", ["look up X", "look up Y"]),
    ("计划：\n1、搜索营业时间\n2、搜索电话", ["搜索营业时间", "搜索电话"]),
    ("PLAN:\nsearch the hours", ["search the hours"]),
    ("PLAN:\n" + "\n".join(f"{n}. s{n}" for n in range(1, 10)), [f"s{n}" for n in range(1, 7)]),
    ("", []),
])
def test_parse_plan(text, steps):
    assert parse_plan(text) == steps


def test_mode_names_and_grammars():
    for name in ("plan-and-solve", "plan_and_solve", "Plan-and-Solve", "PS"):
        assert ChatbotSettings(agent_mode=name).agent_mode == "plan-and-solve"

    class GrammarModel(ScriptedModel):
        supports_grammar = True

    model = GrammarModel([PLAN, 'THOUGHT: x\nACTION: rag_search("x")', "THOUGHT: y\n"
                          "FINAL ANSWER: a", "a"])
    agent, _ = make_agent([], agent_mode="plan-and-solve")
    agent._llm = model
    agent.run(Q)
    assert model.calls[0]["options"].grammar == plan_grammar()
    step = model.calls[1]["options"].grammar
    assert step.startswith('root ::= "THOUGHT: "') and "rag_search" in step
    assert model.calls[0]["options"].grammar != step


def test_a_custom_plan_and_solve_prompt_overrides_the_default():
    agent, model = make_agent([PLAN, "THOUGHT: x\nFINAL ANSWER: a"] * 2,
                              agent_mode="plan-and-solve", require_search=False,
                              plan_and_solve_system_prompt="Mein Plan-Prompt.")
    agent.run(Q)
    assert model.calls[0]["messages"][0]["content"].startswith("Mein Plan-Prompt.")


# --- actors ----------------------------------------------------------------------------------
TASK = "Write a Python function primes_up_to(n) that returns all primes in [1, n]."
PS_REPLY = ("PLAN:\n1. Handle n < 2.\n2. Sieve of Eratosthenes up to n.\n"
            "```python\ndef primes_up_to(n):\n    \"\"\"Sieve.\"\"\"\n    if n < 2:\n"
            "        return []\n    s = [True] * (n + 1)\n    s[0] = s[1] = False\n"
            "    for i in range(2, int(n ** 0.5) + 1):\n        if s[i]:\n"
            "            s[i * i::i] = [False] * len(s[i * i::i])\n"
            "    return [i for i, p in enumerate(s) if p]\n```")


def test_plan_and_solve_writes_reflections_first_attempt():
    llm = ScriptedModel([PS_REPLY, 'Optimal. {"verdict": "pass", "issues": []}'])
    events = list(Reflection(llm, PlanAndSolveActor(llm, kind="code")).stream(TASK))
    draft = next(e for e in events if e.get("status") == "draft")
    assert draft["plan"] == ["Handle n < 2.", "Sieve of Eratosthenes up to n."]
    assert draft["content"].startswith("def primes_up_to(n):")
    assert "devise a plan to solve the problem" in " ".join(llm.prompts[0][-1]["content"].split())
    assert events[-1]["stop_reason"] == "verdict"


def test_the_plan_and_solve_agent_as_reflections_first_attempt():
    llm = ScriptedModel([PLAN, 'THOUGHT: 1\nACTION: rag_search("Öffnungszeiten")',
                         'THOUGHT: 2\nACTION: rag_search("Telefon")', "Mo-Fr [1], Tel [2]",
                         'Complete. {"verdict": "pass", "issues": []}'])
    actor = AgentActor(llm=llm, knowledge=FakeKB(),
                       settings=ChatbotSettings(agent_mode="plan-and-solve",
                                                high_confidence_threshold=0.99))
    events = list(Reflection(llm, actor, kind="text", max_iterations=1).stream(Q))
    draft = next(e for e in events if e.get("status") == "draft")
    assert draft["plan"] == ["Öffnungszeiten suchen", "Telefonnummer suchen"]
    assert draft["content"] == "Mo-Fr [1], Tel [2]" and draft["sources"]
    assert "Mo-Fr 9-18 Uhr" in llm.prompts[4][-1]["content"]       # the reviewer saw sources


CONTEXT = ("Scott Derrickson (born July 16, 1966) is an American director.\n"
           "Edward Davis Wood Jr. (October 10, 1924 - December 10, 1978) was an American "
           "filmmaker.")
QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def test_chain_of_thought_reasons_over_the_given_context_without_tools():
    llm = ScriptedModel(["THOUGHT: Both are described as American.\nFINAL ANSWER: yes"])
    attempt = ChainOfThoughtActor(llm, context=CONTEXT, instructions="Answer yes or no.").act(
        QUESTION)
    assert attempt.output == "yes"
    assert attempt.trajectory.startswith("THOUGHT: Both are described as American.")
    sent = llm.prompts[0][-1]["content"]
    assert CONTEXT in sent and QUESTION in sent and "Answer yes or no." in sent
    assert llm.calls[0]["options"].tools is None


def test_chain_of_thought_is_a_reflexion_actor_that_learns_from_its_lessons():
    llm = ScriptedModel(["THOUGHT: Derrickson is a director, Wood a filmmaker.\nFINAL ANSWER: no",
                         "I compared professions, not nationalities. Next time compare what the "
                         "question asks for.",
                         "THOUGHT: Both are American.\nFINAL ANSWER: yes"])
    result = Reflexion(llm, ChainOfThoughtActor(llm, context=CONTEXT), ExactMatchEvaluator(),
                       max_trials=3).run(QUESTION, eval_task={"answer": "yes"})
    assert result.success and [t.output for t in result.trials] == ["no", "yes"]
    retry = llm.prompts[2][-1]["content"]
    assert "I compared professions" in retry and CONTEXT in retry
    assert "Derrickson is a director" in llm.prompts[1][-1]["content"]  # reflection saw it


def test_chain_of_thought_grammar_on_grammar_backends():
    class GrammarModel(ScriptedModel):
        supports_grammar = True

    llm = GrammarModel(["THOUGHT: x\nFINAL ANSWER: y"])
    ChainOfThoughtActor(llm, context=CONTEXT).act(QUESTION)
    grammar = llm.calls[0]["options"].grammar
    assert grammar.startswith('root ::= "THOUGHT: "') and "ACTION" not in grammar


def test_reflect_cli_actor_choice(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "replies.json"
    path.write_text(json.dumps([PS_REPLY, 'Optimal. No improvement needed.']), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "reflect", TASK, "--actor", "plan-and-solve", "--tests", "none",
                           "--focus", "efficiency", "--llm", f"scripted:{path}", "--json"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AGENTMODES_MEMORY": str(tmp_path / "m.db")})
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert next(e for e in events if e.get("status") == "draft")["plan"]
    assert events[-1]["stop_reason"] == "verdict" and events[-1]["usage"]["calls"] == 2
