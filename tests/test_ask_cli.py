"""`agentmodes ask` as a user runs it: real subprocesses on a real KB, scripted replies."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QUESTION = "Wann hat die DG Agentur geöffnet?"


def ask(*args: str, cwd=None, env_extra=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENTMODES_KB": "", **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "ask", *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=cwd)


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory):
    from agentmodes.knowledge.base import KnowledgeBase

    path = tmp_path_factory.mktemp("ask") / "examples.db"
    with KnowledgeBase.open(path) as base:
        base.ingest(EXAMPLES, embed=False)           # lexical search needs no model
    return path


def replies(tmp_path: Path, items) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return f"scripted:{path}"


def test_ask_prints_trace_answer_and_sources(kb_file, tmp_path):
    llm = replies(tmp_path, ['REFLECTION: Ich weiß noch nichts.\n'
                             'ACTION: lexical_search("Öffnungszeiten")',
                             "REFLECTION: Ziel erreicht.\nFINAL ANSWER: Mo-Fr 9-18 Uhr, "
                             "Sa nach Vereinbarung. [1] [42]"])
    result = ask(QUESTION, "--kb", str(kb_file), "--llm", llm)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Mo-Fr 9-18 Uhr, Sa nach Vereinbarung. [1]\n")
    assert "[42]" not in out
    assert "Quellen:\n[1] " in out and ".md)" in out
    assert "\n[2] " not in out                      # only the cited source is listed
    err = result.stderr
    for fragment in ("reflact", "Iteration 1/5", "REFLECTION: Ich weiß noch nichts.",
                     'ACTION: lexical_search("Öffnungszeiten")', "OBSERVATION:\n  [1] "):
        assert fragment in err, fragment


def test_ask_json_prints_one_event_per_line(kb_file, tmp_path):
    llm = replies(tmp_path, ['THOUGHT: search\nACTION: lexical_search("Telefon")',
                             "THOUGHT: found\nFINAL ANSWER: +49 911 97554990 [1]"])
    result = ask("How can I call DG Agentur?", "--kb", str(kb_file), "--llm", llm,
                 "--mode", "react", "--task-type", "multihop", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0] == {"type": "starting", "status": "starting", "mode": "react",
                         "goal": "How can I call DG Agentur?"}
    # One JSON Lines shape: every line has a type (the status, "delta" or "done").
    assert all(e["type"] == e.get("status", e["type"]) for e in events)
    assert {e["type"] for e in events if "status" not in e} == {"delta", "done"}
    assert events[1]["max"] == 7                     # multihop: 5 + 2
    assert events[-1]["done"] is True
    assert events[-1]["full_response"] == "+49 911 97554990 [1]"
    assert events[-1]["sources"][0]["index"] == 1


def test_ask_uses_agentmodes_kb_and_max_iterations(kb_file, tmp_path):
    llm = replies(tmp_path, ['ACTION: lexical_search("Webentwicklung")', "Webentwicklung [1]"])
    result = ask("Welche Leistungen?", "--llm", llm, "--mode", "act", "--max-iterations", "1",
                 "--json", env_extra={"AGENTMODES_KB": str(kb_file)})
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["max"] for e in events if e.get("status") == "iteration"] == [1]
    assert events[-1]["done"] is True and events[-1]["full_response"]
    # the search ran against the KB named by AGENTMODES_KB
    observation = next(e for e in events if e.get("status") == "observation")
    assert "Webentwicklung" in observation["result_preview"]


@pytest.mark.parametrize("args, fragment", [
    (["   "], "question is empty"),
    ([QUESTION, "--mode", "telepathy"], "'telepathy' is not one of 'act', 'react', 'reflact'"),
    ([QUESTION, "--task-type", "deep"], "'deep' is not one of 'lookup', 'multihop'"),
    ([QUESTION, "--max-iterations", "0"], "--max-iterations"),
    ([QUESTION, "--llm", "scripted:/nonexistent/replies.json"], "not found"),
    ([QUESTION, "--llm", "nonsense:model"], "unknown LLM"),
    ([QUESTION, "notes.md"], "only '-' (stdin as context) may follow the question"),
])
def test_bad_input_is_one_line_and_a_usage_error(kb_file, args, fragment):
    result = ask(*args, "--kb", str(kb_file))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_missing_kb_is_one_line_and_non_zero(tmp_path):
    result = ask(QUESTION, "--kb", str(tmp_path / "none.db"), "--llm",
                 replies(tmp_path, ["FINAL ANSWER: x"]))
    assert result.returncode == 1 and "no knowledge base" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_ask_in_chinese(kb_file, tmp_path):
    llm = replies(tmp_path, ['REFLECTION: 我还不知道营业时间。\nACTION: lexical_search("Öffnungszeiten")',
                             "REFLECTION: 目标已达成。\nFINAL ANSWER: 周一至周五 9-18 点。[1]"])
    result = ask("DG代理公司什么时候营业？", "--kb", str(kb_file), "--llm", llm, "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["full_response"] == "周一至周五 9-18 点。[1]"
    shown = ask("DG代理公司什么时候营业？", "--kb", str(kb_file), "--llm", llm)
    assert "来源：\n[1] " in shown.stdout
    forced = ask(QUESTION, "--kb", str(kb_file), "--llm", llm, "--language", "zh", "--json")
    assert forced.returncode == 0, forced.stderr
    bad = ask(QUESTION, "--kb", str(kb_file), "--llm", llm, "--language", "fr")
    assert bad.returncode == 2 and "'auto', 'de', 'en', 'zh'" in bad.stderr


def test_ask_plan_and_solve_shows_the_plan(kb_file, tmp_path):
    llm = replies(tmp_path, ["PLAN:\n1. Öffnungszeiten suchen\n2. Antworten",
                             'THOUGHT: Schritt 1\nACTION: lexical_search("Öffnungszeiten")',
                             "THOUGHT: fertig\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"])
    result = ask(QUESTION, "--kb", str(kb_file), "--llm", llm, "--mode", "plan-and-solve")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Mo-Fr 9-18 Uhr [1]")
    assert "PLAN:\n  1. Öffnungszeiten suchen\n  2. Antworten" in result.stderr
    assert "plan step 1: Öffnungszeiten suchen" in result.stderr
