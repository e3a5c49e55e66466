"""`bench alfworld` on the real game engine with a scripted model: a won game, Reflexion
winning in its second trial with the plan it wrote after the first, per-game logs with the
whole trajectory, the report beside the papers' figures, and a resumed run that calls no
model at all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentmodes.bench.alfworld import parse_variants, run_alfworld
from agentmodes.environments.alfworld import ALFWorldEnv
from agentmodes.environments.alfworld_data import load_games
from agentmodes.errors import ConfigError
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.store.memory import ReflexionMemoryStore

from alfworld_support import games_root, needs_data, needs_engine, shared_data  # noqa: F401

pytestmark = [needs_data]

LESSON = "New plan: go to countertop 3 first, take the bread there, cool it, then place it."


def test_variants():
    assert parse_variants("react,act", True) == ["react", "act", "react+reflexion",
                                                 "act+reflexion"]
    assert parse_variants("act,react,react+reflexion", False) == ["act", "react",
                                                                   "react+reflexion"]
    assert parse_variants("react+reflexion,react", True) == ["react", "react+reflexion"]
    with pytest.raises(ConfigError):
        parse_variants("plan", False)


@needs_engine
@pytest.mark.slow
def test_a_run_reflexion_on_top_logs_and_resume(games_root, tmp_path):
    game = load_games(shared_data(), cache_dir=games_root, task_types=["cool"], limit=1)[0]
    with ALFWorldEnv(game.path) as env:
        plan = env.walkthrough()
    win = [f"ACTION: {c}" for c in plan]
    stuck = ["THOUGHT: The bread is on countertop 1.\nACTION: take bread 1 from countertop 1"] + \
        ["ACTION: take bread 1 from countertop 1"] * 3
    llm = ScriptedModel(win + stuck + [LESSON] + win)
    report, paths = run_alfworld(llm, llm_label="scripted", variants=["react", "react+reflexion"],
                                 task_types=["cool"], limit=1, data_dir=shared_data(),
                                 out_dir=tmp_path, trials=3, cache_dir=games_root,
                                 show_progress=False)
    rows = {r["variant"]: r for r in report.rows}
    assert rows["react"]["success"] == 1.0 and rows["react"]["cool"] == 1.0
    assert rows["react"]["put"] is None                        # no Pick game in this sample
    assert rows["react"]["steps_per_game"] == len(plan)
    reflexion = rows["react+reflexion"]
    assert reflexion["success"] == 1.0 and reflexion["trials_per_game"] == 2
    assert reflexion["solved_by_trial"] == [0.0, 1.0, 1.0]
    assert reflexion["llm_calls_per_task"] == 4 + 1 + len(plan)
    assert len(llm.calls) == 2 * len(plan) + 5
    # Trial 2's prompt carried the plan written after trial 1.
    assert LESSON.partition(": ")[2] in llm.prompts[len(plan) + 5][1]["content"]

    records = [json.loads(line) for line in
               (tmp_path / "runs" / "alfworld" / "scripted.jsonl").read_text().splitlines()]
    assert [(r["variant"], r.get("trial"), r["won"]) for r in records] == [
        ("react", None, True), ("react+reflexion", 1, False), ("react+reflexion", 2, True)]
    stuck_log = json.loads(open(records[1]["log"], encoding="utf-8").read())
    assert stuck_log["outcome"] == "stuck" and stuck_log["evaluation"]["details"]["times"] == 4
    assert stuck_log["reflection"] == LESSON.partition(": ")[2] or \
        stuck_log["reflection"] == LESSON
    assert [s["observation"] for s in stuck_log["steps"]] == ["Nothing happens."] * 4
    assert stuck_log["steps"][0]["thought"] == "The bread is on countertop 1."
    won_log = json.loads(open(records[2]["log"], encoding="utf-8").read())
    assert won_log["won"] and won_log["memory"] and [s["param"] for s in won_log["steps"]] == plan
    assert won_log["transcript"].splitlines()[-1].startswith("You put the bread")
    memory = ReflexionMemoryStore(tmp_path / "runs" / "alfworld" / "scripted.memory.db")
    assert len(memory.load(f"alfworld:react+reflexion:{game.name}")) == 1

    md = paths["md"].read_text(encoding="utf-8")
    assert "ReAct, best of 6 prompt pairs | 71.0% | PaLM-540B" in md
    assert "130 of 134 games" in md and "93.3%" in md
    assert "134 games: LLM calls" in md and paths["png"].stat().st_size > 0
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert {p["compares_to"] for p in data["published"]} >= {"act", "react", "reflact",
                                                             "react+reflexion"}

    # Resumed: every game and trial is in the log, so a model without replies is never called.
    again, _ = run_alfworld(ScriptedModel([]), llm_label="scripted",
                            variants=["react", "react+reflexion"], task_types=["cool"], limit=1,
                            data_dir=shared_data(), out_dir=tmp_path, trials=3,
                            cache_dir=games_root, show_progress=False)
    assert [r["success"] for r in again.rows] == [1.0, 1.0]
    assert again.meta["resumed"].startswith("3 of 3")


def test_bad_options_are_one_line_errors(tmp_path):
    for args, words in ((["--modes", "plan"], "unknown mode plan"),
                        (["--task-types", "bake"], "unknown ALFWorld task type")):
        proc = subprocess.run([sys.executable, "-m", "agentmodes", "bench", "alfworld", *args,
                               "--out", str(tmp_path)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and words in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
