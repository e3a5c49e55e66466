"""The HotpotQA harness on real data: KB from the context paragraphs, the real Agent on a
scripted model, EM/F1 scoring, Reflexion on top, resumable run log."""

from __future__ import annotations

import json

import pytest

from agentmodes.bench.hotpotqa import (build_kb, clean_answer, load_questions, parse_variants,
                                       pooled_paragraphs, run_hotpotqa)
from agentmodes.errors import ConfigError
from agentmodes.llm.scripted import ScriptedModel
from data_support import HOTPOTQA, needs_data

SEARCH = 'THOUGHT: I need the new name of VIVA Media.\nACTION: lexical_search("VIVA Media")'
WRONG = "THOUGHT: It became a GmbH.\nFINAL ANSWER: VIVA Media GmbH [1]"
RIGHT = "THOUGHT: GmbH stands for it.\nFINAL ANSWER: Gesellschaft mit beschränkter Haftung [1]"


@pytest.fixture(scope="module")
def small_kb(tmp_path_factory):
    questions = load_questions()[:2]
    return build_kb(questions, tmp_path_factory.mktemp("hotpot"), embed=False)


@needs_data(HOTPOTQA)
def test_questions_and_pooled_paragraphs():
    questions = load_questions()
    assert len(questions) == 100 and questions[0].answer == "Gesellschaft mit beschränkter Haftung"
    pool = pooled_paragraphs(questions)
    assert 900 <= len(pool) <= 1000 and "VIVA Media" in pool


@needs_data(HOTPOTQA)
def test_react_and_reflexion_on_top(small_kb, tmp_path):
    llm = ScriptedModel([SEARCH, RIGHT,                      # react
                         SEARCH, WRONG,                      # react+reflexion trial 1
                         "The answer must expand the acronym, not repeat the company name.",
                         SEARCH, RIGHT])                     # trial 2
    report, paths = run_hotpotqa(llm, llm_label="scripted", variants=parse_variants("react", True),
                                 limit=1, out_dir=tmp_path, kb_path=small_kb, show_progress=False)
    rows = {r["variant"]: r for r in report.rows}
    assert rows["react"]["em"] == 1.0 and rows["react"]["f1"] == 1.0
    assert rows["react+reflexion"]["em"] == 1.0 and rows["react+reflexion"]["trials_per_task"] == 2
    assert rows["react"]["llm_calls_per_task"] == 2 and rows["react+reflexion"]["llm_calls_per_task"] == 5
    # Iterations are the agent's own (adaptive exit may end a run after its first search);
    # Reflexion's are the sum over its two trials.
    assert rows["react"]["iterations_per_task"] >= 1
    assert rows["react+reflexion"]["iterations_per_task"] == 2 * rows["react"]["iterations_per_task"]
    # The agent really searched the KB: the second call saw the paragraph about VIVA Media.
    assert "VIVA Media AG" in json.dumps(llm.prompts[1], ensure_ascii=False)
    # The short-answer instruction reached the agent's system prompt.
    assert "shortest possible answer" in llm.prompts[0][0]["content"]
    assert {p.suffix for p in paths.values()} == {".json", ".md", ".png"}
    log = tmp_path / "runs" / "hotpotqa" / "scripted.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["answer"] for r in records] == ["Gesellschaft mit beschränkter Haftung"] * 2
    # The evaluator passed trial 2 (citation markers do not break exact match).
    assert records[1]["reflexion_success"] is True and records[1]["trials"] == 2
    assert len(llm.calls) == 7

    # A rerun skips both finished jobs: a model without replies is never called.
    again, _ = run_hotpotqa(ScriptedModel([]), llm_label="scripted",
                            variants=["react", "react+reflexion"], limit=1, out_dir=tmp_path,
                            kb_path=small_kb, show_progress=False)
    assert again.rows == report.rows


def test_clean_answer_and_bad_modes():
    assert clean_answer("Bern [1][2]\nBecause ...") == "Bern"
    assert clean_answer("Paris [1, 2].") == "Paris."
    with pytest.raises(ConfigError):
        parse_variants("react,plan", False)
    assert parse_variants("act, reflact", True) == ["act", "reflact", "act+reflexion",
                                                    "reflact+reflexion"]


def test_cli_bad_input_is_one_line(tmp_path):
    import subprocess
    import sys

    def bench(*args):
        return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                               "bench", *args], capture_output=True, text=True, timeout=120)

    # A missing data folder is a runtime failure (exit 1), a bad choice a usage error (2).
    for args, code in ((["hotpotqa", "--data", str(tmp_path / "missing")], 1),
                       (["hotpotqa", "--modes", "react,plan"], 2),
                       (["humaneval", "--strategy", "magic"], 2),
                       (["mbpp", "--data", str(tmp_path)], 1)):
        done = bench(*args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == code and len(lines) == 1, (args, done.stderr)
        assert lines[0].startswith("agentmodes: error:")


@needs_data(HOTPOTQA)
def test_gold_context_cot_and_reflexion_beside_the_papers_row(tmp_path):
    from agentmodes.bench.hotpotqa_gold import gold_context, run_hotpotqa_gold

    question = load_questions()[0]
    context = gold_context(question)
    assert context.startswith("VIVA Media: VIVA Media GmbH (until 2004") and \
        "Gesellschaft mit beschränkter Haftung:" in context
    assert "Constantin Medien" not in context               # a distractor paragraph
    wrong = "THOUGHT: It was renamed VIVA Media GmbH.\nFINAL ANSWER: VIVA Media GmbH"
    right = "THOUGHT: GmbH is the acronym.\nFINAL ANSWER: Gesellschaft mit beschränkter Haftung"
    llm = ScriptedModel([wrong,                                     # cot
                         wrong, "I named the company, not what the acronym stands for.",
                         right])                                    # reflexion
    report, paths = run_hotpotqa_gold(llm, llm_label="scripted", strategies=["cot", "reflexion"],
                                      limit=1, out_dir=tmp_path, show_progress=False)
    rows = {r["variant"]: r for r in report.rows}
    assert rows["cot"]["em"] == 0.0 and rows["reflexion"]["em"] == 1.0
    assert rows["reflexion"]["trials_per_task"] == 2 and rows["reflexion"]["llm_calls_per_task"] == 3
    first = llm.prompts[0][-1]["content"]
    assert context in first and question.question in first and "shortest possible" in first
    assert "I named the company" in llm.prompts[3][-1]["content"]    # the lesson in trial 2
    table = paths["md"].read_text()
    assert table.startswith("# hotpotqa (gold context)")
    assert "| CoT (GT) only | 0.61 |" in table and "| CoT (GT) + Reflexion | 0.75 |" in table
    assert "text-davinci-003" in table
    assert (tmp_path / "runs" / "hotpotqa_gold" / "scripted.jsonl").is_file()


def test_gold_context_cli_bad_input(tmp_path):
    import subprocess
    import sys

    for args, message in ((["--setting", "gold"], "unknown setting 'gold'"),
                          (["--strategy", "cot"], "--strategy is for --setting gold-context"),
                          (["--setting", "gold-context", "--strategy", "tot"],
                           "unknown strategy tot")):
        done = subprocess.run([sys.executable, "-m", "agentmodes", "bench", "hotpotqa", *args,
                               "--out", str(tmp_path)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr


def test_gold_in_answer_tells_a_wrapped_answer_from_a_wrong_one():
    from agentmodes.bench.hotpotqa import em_report

    records = [{"task_id": "a", "variant": "cot", "gold": "Sam Boyd Stadium", "em": False,
                "f1": 0.3, "answer": "Kent Baer coaches at a stadium called Sam Boyd Stadium."},
               {"task_id": "b", "variant": "cot", "gold": "Tybalt", "em": False, "f1": 0.0,
                "answer": "Benvolio"},
               {"task_id": "c", "variant": "cot", "gold": "1988", "error": "timeout"}]
    report = em_report("hotpotqa", records, ["cot"], {})
    assert report.rows[0]["em"] == 0.0
    assert report.rows[0]["gold_in_answer"] == 0.3333              # errors count as misses
    assert [t["gold_in_answer"] for t in report.tasks] == [True, False, False]
    assert "gold in answer" in [c.label for c in report.columns]
