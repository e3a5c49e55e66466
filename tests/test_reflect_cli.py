"""`agentmodes reflect` as a user runs it: a real subprocess, scripted replies, real sandbox."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

TASK = "Write a Python function primes_up_to(n) that returns all primes in [1, n]."
TRIAL = ("```python\ndef primes_up_to(n):\n    \"\"\"Trial division.\"\"\"\n"
         "    return [k for k in range(2, n + 1) if all(k % d for d in range(2, int(k ** 0.5) + 1))]\n```")
SIEVE = ("```python\ndef primes_up_to(n):\n    \"\"\"Sieve of Eratosthenes.\"\"\"\n"
         "    if n < 2:\n        return []\n    is_p = [True] * (n + 1)\n"
         "    is_p[0] = is_p[1] = False\n    for i in range(2, int(n ** 0.5) + 1):\n"
         "        if is_p[i]:\n            is_p[i * i::i] = [False] * len(is_p[i * i::i])\n"
         "    return [i for i, p in enumerate(is_p) if p]\n```")
REVISE = 'O(n sqrt n): use a sieve.\n{"verdict": "revise", "issues": ["use a sieve"]}'
PASS = 'Optimal.\n{"verdict": "pass", "issues": []}'


def reflect(tmp_path: Path, replies: list, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    env = {**os.environ, "AGENTMODES_MEMORY": str(tmp_path / "memory.db")}
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "reflect", *args, "--llm", f"scripted:{path}"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_seed_example_trial_division_to_sieve(tmp_path):
    tests = tmp_path / "tests.txt"
    tests.write_text("assert primes_up_to(10) == [2, 3, 5, 7]\nassert primes_up_to(1) == []\n")
    done = reflect(tmp_path, [TRIAL, REVISE, SIEVE, PASS], TASK, "--tests", str(tests))
    assert done.returncode == 0, done.stderr
    assert "Sieve of Eratosthenes" in done.stdout and "Trial division" not in done.stdout
    trace = done.stderr
    order = [trace.index(s) for s in ("Unit tests (2)", "Draft", "Tests 0: passed",
                                      "Critique 1 · verdict: revise", "Refinement 1",
                                      "Critique 2 · verdict: pass", "4 LLM call(s)")]
    assert order == sorted(order)


def test_json_events_and_auto_tests(tmp_path):
    tests_reply = "assert primes_up_to(10) == [2, 3, 5, 7]\nassert primes_up_to(2) == [2]"
    done = reflect(tmp_path, [tests_reply, TRIAL, PASS], TASK, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["status"] == "starting" and events[1]["phase"] == "tests_written"
    assert events[1]["tests"][0] == "assert primes_up_to(10) == [2, 3, 5, 7]"
    final = events[-1]
    assert final["done"] and final["evaluation"]["passed"] and final["usage"]["calls"] == 3


def test_reflexion_remembers_lessons_across_runs(tmp_path):
    tests = tmp_path / "tests.txt"
    tests.write_text("assert primes_up_to(10) == [2, 3, 5, 7]\n")
    wrong = "```python\ndef primes_up_to(n):\n    return list(range(n))\n```"
    first = reflect(tmp_path, [wrong, "Only primes may be returned; filter composites."],
                    TASK, "--strategy", "reflexion", "--max-iterations", "1", "--tests", str(tests))
    assert first.returncode == 0, first.stderr
    assert "Self-reflection" in first.stderr and "tests failed" in first.stderr
    second = reflect(tmp_path, [SIEVE], TASK, "--strategy", "reflexion", "--tests", str(tests),
                     "--json")
    events = [json.loads(line) for line in second.stdout.splitlines()]
    memory = next(e for e in events if e.get("status") == "memory")
    assert memory["reflections"] == ["Only primes may be returned; filter composites."]
    assert events[-1]["success"] is True


def test_wraps_an_agent_run_over_a_knowledge_base(tmp_path):
    from agentmodes.knowledge.base import KnowledgeBase

    kb = tmp_path / "examples.db"
    with KnowledgeBase.open(kb) as base:
        base.ingest(Path(__file__).resolve().parents[1] / "examples", embed=False)
    # German answers from the German documents: the answer composer keeps what a source
    # supports (an English "Open on weekdays" over them would be replaced by their sentences)
    replies = ['REFLECTION: Ich weiß noch nichts.\nACTION: lexical_search("Öffnungszeiten")',
               "REFLECTION: Die Zeiten stehen in der Beobachtung.\n"
               "FINAL ANSWER: Unser Büro ist Montag bis Freitag geöffnet [1].",
               'Zu vage: nenne die Uhrzeiten.\n{"verdict": "revise", "issues": ["Uhrzeiten"]}',
               "Unser Büro ist Montag bis Freitag von 9 bis 18 Uhr geöffnet [1].", PASS]
    done = reflect(tmp_path, replies, "Wann ist das Büro geöffnet?", "--kb", str(kb),
                   "--mode", "reflact", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    draft = next(e for e in events if e.get("status") == "draft")
    assert re.fullmatch(r"Unser Büro ist Montag bis Freitag geöffnet \[\d\]\.", draft["content"])
    assert draft["sources"]
    final = events[-1]
    assert re.fullmatch(r"Unser Büro ist Montag bis Freitag von 9 bis 18 Uhr geöffnet \[\d\]\.",
                        final["full_response"].split("\n")[0]), final["full_response"]
    assert final["sources"]
    assert final["stop_reason"] == "verdict" and final["usage"]["calls"] == 5


def test_bad_input_is_one_line_and_nonzero(tmp_path):
    for args in (["   "], [TASK, "--strategy", "magic"], [TASK, "--tests", str(tmp_path / "nope")],
                 [TASK, "--kind", "text", "--tests", __file__]):
        done = reflect(tmp_path, [PASS], *args)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentmodes: error:"), done.stderr


def test_reflexion_judged_by_the_rule_heuristic_over_the_agent_trajectory(tmp_path):
    from agentmodes.knowledge.base import KnowledgeBase

    kb = tmp_path / "examples.db"
    with KnowledgeBase.open(kb) as base:
        base.ingest(Path(__file__).resolve().parents[1] / "examples", embed=False)
    search = 'REFLECTION: r\nACTION: lexical_search("{}")'
    # searches that find nothing: a confident hit would end the run early (adaptive exit)
    replies = [search.format("Wetter morgen"), search.format("Kaffee"),
               "REFLECTION: done\nFINAL ANSWER: Not in the documents.",
               "Two searches were one too many; search once.",
               search.format("Kaffee"), "REFLECTION: done\nFINAL ANSWER: Not in the documents."]
    done = reflect(tmp_path, replies, "When is the agency open?", "--kb", str(kb),
                   "--strategy", "reflexion", "--evaluator", "heuristic", "--max-steps", "1",
                   "--no-memory", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    evaluations = [e for e in events if e.get("status") == "evaluation"]
    assert [e["passed"] for e in evaluations] == [False, True]
    assert evaluations[0]["details"]["rule"] == "too_many_steps"
    assert events[-1]["success"] is True and events[-1]["iterations"] == 2


def test_heuristic_needs_an_agent_run(tmp_path):
    done = reflect(tmp_path, [PASS], TASK, "--strategy", "reflexion", "--evaluator", "heuristic")
    assert done.returncode == 2 and "needs --kb" not in done.stderr
    assert "give --kb" in done.stderr
