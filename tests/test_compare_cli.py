"""`agentmodes compare` on the example documents with a scripted model, as a user runs it:
a questions file (text, JSON Lines, stdin), every mode's row, figures that add up with the
events the runs emitted, gold scoring, Reflection on top, the judge, the written report,
and bad input as one line with exit 2 (usage) or 1 (runtime)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from agentmodes.compare.scoring import gold_scores
from kb_fixtures import examples_kb, scripted_replies
from test_cli_conventions import cli

QUESTIONS = ["Wann hat die DG Agentur geöffnet?", "Wie ist die Telefonnummer der Agentur?"]
MODES = ("act", "react", "reflact")
# Two replies per run: a search, then an answer citing the first hit. Each mode gets its
# own step format; the second reply also serves as the answer call after an adaptive exit.
RUN = {
    "act": ['ACTION: lexical_search("Öffnungszeiten")', "FINAL ANSWER: Mo-Fr 9-18 Uhr [1]"],
    "react": ['THOUGHT: I search first.\nACTION: lexical_search("Öffnungszeiten Kontakt")',
              "THOUGHT: Found it.\nFINAL ANSWER: Montag bis Freitag 9-18 Uhr [1]"],
    "reflact": ['REFLECTION: Ich weiß noch nichts.\nACTION: lexical_search("Telefon")',
                "REFLECTION: Ziel erreicht.\nFINAL ANSWER: Telefon +49 911 97554990 [1]"],
}


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory):
    return examples_kb(tmp_path_factory.mktemp("compare") / "examples.db")


def script(tmp_path: Path, questions: int, modes=MODES, extra_per_run=()) -> str:
    """Replies in the order the comparison asks: question by question, mode by mode."""
    items = []
    for _ in range(questions):
        for mode in modes:
            items += RUN[mode] + list(extra_per_run)
    return f"scripted:{scripted_replies(tmp_path, items)}"


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def events_by_run(path: Path) -> dict[tuple[int, str], list[dict]]:
    runs: dict[tuple[int, str], list[dict]] = {}
    for e in lines(path.read_text(encoding="utf-8")):
        runs.setdefault((e.pop("question_index"), e.pop("variant")), []).append(e)
    return runs


def assert_adds_up(run: dict, events: list[dict]) -> None:
    """The row's figures are what the run's events say, and its parts add up to totals."""
    done = events[-1]
    assert done.get("done") is True
    usage = done["usage"]
    assert (run["llm_calls"], run["prompt_tokens"], run["completion_tokens"]) == (
        usage["calls"], usage["prompt_tokens"], usage["completion_tokens"])
    calls = run["calls"]
    assert len(calls) + run["other_calls"] == run["llm_calls"]
    assert sum(c["prompt_tokens"] for c in calls) + run["other_prompt_tokens"] == \
        run["prompt_tokens"]
    assert sum(c["completion_tokens"] for c in calls) + run["other_completion_tokens"] == \
        run["completion_tokens"]
    # One call per step of the loop; the answer written after the loop stopped is the
    # one unattributed call, exactly when a final_answer event gives a reason.
    answer_call = any(e.get("status") == "final_answer" and e.get("reason") for e in events)
    reviews = sum(1 for e in events if e.get("status") in ("critique", "refinement"))
    assert run["other_calls"] == int(answer_call)
    assert sum(1 for c in calls if c["kind"] == "step") + reviews == len(calls)
    assert run["iterations"] == done["iterations"] == max(
        e["iteration"] for e in events if e.get("status") == "iteration")
    assert run["parse_errors"] == sum(e.get("status") == "parse_error" for e in events)
    assert run["adaptive_exit"] == done["adaptive_exit"] == any(
        e.get("status") == "adaptive_iteration" for e in events)
    assert run["sources_cited"] == sum(s["cited"] for s in done["sources"])
    assert run["sources_retrieved"] == len(done["sources"])
    assert run["answer"] == done["full_response"]
    assert run["wall_s"] == pytest.approx(done["elapsed_s"] + (done.get("reflection") or {})
                                          .get("elapsed_s", 0.0), abs=1e-3)
    per_step = [c for c in calls if c["kind"] == "step"]
    if per_step:
        assert run["completion_tokens_per_step"] == pytest.approx(
            sum(c["completion_tokens"] for c in per_step) / len(per_step), abs=0.05)


def test_every_mode_row_with_figures_that_add_up_and_the_report_files(kb_file, tmp_path):
    questions = tmp_path / "questions.txt"
    questions.write_text("\n".join(QUESTIONS) + "\n\n", encoding="utf-8")
    out = tmp_path / "report"
    done = cli("compare", str(questions), "--kb", str(kb_file), "--llm",
               script(tmp_path, len(QUESTIONS)), "--judge", "off", "--json", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = lines(done.stdout)
    runs = [r for r in rows if r["type"] == "run"]
    assert {(r["question_index"], r["variant"]) for r in runs} == {
        (q, m) for q in (1, 2) for m in MODES}
    assert [r["variant"] for r in rows if r["type"] == "summary"] == list(MODES)
    events = events_by_run(out / "compare.events.jsonl")
    for run in runs:
        assert run["question"] == QUESTIONS[run["question_index"] - 1]
        assert run["error"] is None and run["iterations"] >= 1
        assert_adds_up(run, events[(run["question_index"], run["variant"])])
    by_mode = {r["variant"]: r for r in runs if r["question_index"] == 1}
    # The row shows what the user reads (the composed answer) and what the model wrote.
    assert by_mode["reflact"]["model_answer"] == "Telefon +49 911 97554990 [1]"
    assert "[1]" in by_mode["reflact"]["answer"] or "[" in by_mode["reflact"]["answer"]
    assert by_mode["act"]["calls"][0]["iteration"] == 1
    # The summary is the rows' arithmetic.
    summary = {r["variant"]: r for r in rows if r["type"] == "summary"}
    for mode in MODES:
        mine = [r for r in runs if r["variant"] == mode]
        assert summary[mode]["llm_calls_per_question"] == pytest.approx(
            sum(r["llm_calls"] for r in mine) / len(mine))
        assert summary[mode]["questions"] == 2 and summary[mode]["errors"] == 0
    # The files: CSV rows, Markdown with the plot and a section per question.
    with (out / "compare.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 6 and {r["variant"] for r in table} == set(MODES)
    assert table[0]["llm_calls"] == str(runs[0]["llm_calls"])
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "![tokens, time and quality per mode](compare.png)" in md
    assert f"### 1. {QUESTIONS[0]}" in md and f"### 2. {QUESTIONS[1]}" in md
    assert (out / "compare.png").stat().st_size > 1000
    assert lines((out / "compare.jsonl").read_text(encoding="utf-8"))[0]["type"] == "run"


def test_terminal_tables_name_every_mode_and_cut_nothing(kb_file, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text(QUESTIONS[0] + "\n", encoding="utf-8")
    done = cli("compare", str(questions), "--kb", str(kb_file), "--llm",
               script(tmp_path, 1), "--judge", "off")
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    assert f"1. {QUESTIONS[0]}" in done.stdout and "Summary per mode" in done.stdout
    for mode in MODES:
        assert f"\n{mode}: " in done.stdout                  # its answer, whole
    for heading in ("completion tok/step", "adaptive exits", "parse errors", "tokens vs act"):
        assert heading in done.stdout


def test_gold_answers_score_em_f1_and_gold_in_answer(kb_file, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(json.dumps({"id": f"k{i}", "question": q})
                                   for i, q in enumerate(QUESTIONS)), encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "k0", "answer": "Mo-Fr 9-18 Uhr"}) + "\n"
                    + json.dumps({"question": QUESTIONS[1], "answers": ["+49 911 97554990"]}),
                    encoding="utf-8")
    done = cli("compare", str(questions), "--kb", str(kb_file), "--llm",
               script(tmp_path, 2), "--answers", str(gold), "--json")
    assert done.returncode == 0, done.stderr
    runs = {(r["question_id"], r["variant"]): r for r in lines(done.stdout) if r["type"] == "run"}
    golds = {"k0": ["Mo-Fr 9-18 Uhr"], "k1": ["+49 911 97554990"]}
    for (qid, variant), run in runs.items():            # each row scored against its gold
        assert run["gold"] == golds[qid]
        expected = gold_scores(run["answer"], golds[qid])
        assert {k: run[k] for k in expected} == expected
        assert "judge_grounded" not in run              # gold given: no judge
    # The examples' contact page gives the number: every mode's answer to k1 contains it.
    assert all(runs[("k1", m)]["gold_in_answer"] for m in MODES)
    summary = {r["variant"]: r for r in lines(done.stdout) if r["type"] == "summary"}
    for mode in MODES:
        mine = [r for (_, v), r in runs.items() if v == mode]
        assert summary[mode]["gold_in_answer"] == sum(r["gold_in_answer"] for r in mine) / 2
        assert summary[mode]["f1"] == pytest.approx(sum(r["f1"] for r in mine) / 2, abs=1e-4)


def test_gold_scores_short_answer_and_gold_anywhere():
    assert gold_scores("Mo-Fr 9-18 Uhr [1]\n\nMore text [2].", ["mo-fr 9-18 uhr"]) == {
        "em": True, "f1": 1.0, "gold_in_answer": True}
    scores = gold_scores("Montag bis Freitag 9-18 Uhr [1]", ["Mo-Fr 9-18 Uhr"])
    assert scores["em"] is False and 0 < scores["f1"] < 1 and not scores["gold_in_answer"]
    scores = gold_scores("The office: Eupen.\nCall +49 911 97554990 [3].", ["+49 911 97554990"])
    assert scores["gold_in_answer"] and not scores["em"]
    assert gold_scores("Bern [1]", ["Zürich", "Bern"])["em"] is True       # any gold counts
    assert gold_scores("Hamburger", ["Hamburg"])["gold_in_answer"] is False   # whole words


def test_stdin_questions_reflection_rows_and_the_judge(kb_file, tmp_path):
    verdict = '{"issues": [], "verdict": "pass"}'
    revise = '{"issues": ["no source"], "verdict": "revise"}'
    # Per run: the mode's two replies, the judge on its answer (grounded: pass, complete:
    # revise), the review (a pass: no refinement), the judge on the reviewed answer.
    items = []
    for mode in ("react", "reflact"):
        items += RUN[mode] + [verdict, revise, verdict, verdict, verdict]
    llm = f"scripted:{scripted_replies(tmp_path, items)}"
    done = cli("compare", "-", "--kb", str(kb_file), "--llm", llm, "--modes", "react,reflact",
               "--reflection", "1", "--json", "--out", str(tmp_path / "out"),
               stdin=QUESTIONS[0] + "\n")
    assert done.returncode == 0, done.stderr
    runs = {r["variant"]: r for r in lines(done.stdout) if r["type"] == "run"}
    # Rows are printed as they finish: each mode, then its reviewed row.
    assert list(runs) == ["react", "react+reflection", "reflact", "reflact+reflection"]
    events = events_by_run(tmp_path / "out" / "compare.events.jsonl")
    for variant, run in runs.items():
        assert_adds_up(run, events[(1, variant)])
    plain, reviewed = runs["react"], runs["react+reflection"]
    assert reviewed["llm_calls"] == plain["llm_calls"] + 1          # one critique: a pass
    assert reviewed["reflection_rounds"] == 0 and reviewed["reflection_stop"] == "verdict"
    assert [c["kind"] for c in reviewed["calls"]][-1] == "critique"
    assert plain["judge_grounded"] is True and plain["judge_complete"] is False
    assert plain["judge_issues"] == ["completeness: no source"]
    assert reviewed["judge_grounded"] is True and reviewed["judge_complete"] is True


@pytest.mark.parametrize("content, message", [
    ("", "holds no questions"),
    ('{"question": "ok"}\n{"question": \n', "line 2: not a JSON object"),
    ('{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n', "'a' is used by more"),
    ('{"text": "no question key"}\n', "line 1: no \"question\""),
])
def test_bad_questions_are_one_line_usage_errors(kb_file, tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    done = cli("compare", str(path), "--kb", str(kb_file), "--llm", script(tmp_path, 1))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_bad_input_and_failures_exit_codes(kb_file, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text(QUESTIONS[0] + "\n", encoding="utf-8")
    llm = script(tmp_path, 1)

    def one_line(done, code, text):
        assert done.returncode == code, done.stderr
        assert text in done.stderr and len(done.stderr.strip().splitlines()) == 1

    one_line(cli("compare", str(questions), "--kb", str(kb_file), "--llm", llm,
                 "--modes", "act,cot"), 2, "unknown mode cot")
    one_line(cli("compare", str(tmp_path / "missing.txt"), "--kb", str(kb_file), "--llm", llm),
             1, "questions file not found")
    gold = tmp_path / "gold.txt"
    gold.write_text("a\nb\n", encoding="utf-8")
    one_line(cli("compare", str(questions), "--kb", str(kb_file), "--llm", llm, "--answers",
                 str(gold)), 2, "2 answer lines for 1 questions")
    one_line(cli("compare", "-", "--kb", str(kb_file), "--llm", llm), 2, "stdin")
    one_line(cli("compare", str(questions), "--kb", str(tmp_path / "nokb.db"), "--llm", llm),
             1, "nokb.db")
    # A run that fails (the model runs out of replies) is a row with its error; the others
    # are kept, and the exit code says that something failed.
    short = f"scripted:{scripted_replies(tmp_path, RUN['act'] + RUN['react'])}"
    done = cli("compare", str(questions), "--kb", str(kb_file), "--llm", short, "--judge",
               "off", "--json")
    assert done.returncode == 1
    runs = {r["variant"]: r for r in lines(done.stdout) if r["type"] == "run"}
    assert runs["act"]["error"] is None and runs["react"]["error"] is None
    assert "no reply left" in runs["reflact"]["error"]
    assert "1 of 3 runs failed" in done.stderr.strip().splitlines()[-1]
