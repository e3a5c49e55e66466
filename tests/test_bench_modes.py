"""`agentmodes bench modes`: the seeds' table beside the measured one, every variant's
column, resumable runs, and usage errors before any data or model is touched. The runs use
a scripted model over the example documents (a stand-in QA set); the real sets are the
committed results' business (benchmarks/results/modes_*.md)."""

from __future__ import annotations

import json

import pytest

from agentmodes.bench import modes as bench_modes
from agentmodes.bench.answer_data import QA, QASet
from agentmodes.llm.scripted import ScriptedModel
from kb_fixtures import examples_kb
from test_cli_conventions import cli

REPLIES = ['THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")',
           "THOUGHT: found\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]",
           '{"issues": [], "verdict": "pass"}']


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A two-question QA set over the example documents instead of HotpotQA/XQuAD."""
    kb = examples_kb(tmp_path / "kb.db")
    qa = QASet("xquad-en", {}, [
        QA("a", "Wann hat die DG Agentur geöffnet?", ("Mo-Fr 9-18 Uhr",), frozenset(), "xquad-en"),
        QA("b", "Wie erreiche ich die Agentur?", ("+49 911 97554990",), frozenset(), "xquad-en")])
    monkeypatch.setattr(bench_modes, "load_qa", lambda name, data_dir=None: qa)
    monkeypatch.setattr(bench_modes, "build_kb", lambda qa: (kb, {}))
    return qa


def test_measured_table_beside_the_seeds_and_resumed_runs(stand_in, tmp_path):
    def llm():
        # Each run takes three replies, with or without an adaptive exit: a search, the
        # answer (a step, or the answer call after the exit), one critique (a pass).
        return ("scripted", ScriptedModel(REPLIES, cycle=True), 1)

    results, paths = bench_modes.run_modes([llm()], datasets=["xquad-en"],
                                           modes=["act", "react"], reflection=1,
                                           out_dir=tmp_path / "out", show_progress=False)
    [result] = results
    variants = [s["variant"] for s in result["summary"]]
    assert variants == ["act", "react", "act+reflection", "react+reflection"]
    assert len(result["rows"]) == 8 and result["questions"] == 2
    by = {s["variant"]: s for s in result["summary"]}
    assert by["react+reflection"]["llm_calls_per_question"] == \
        by["react"]["llm_calls_per_question"] + 1
    md = paths["md"].read_text(encoding="utf-8")
    assert "## What the seeds say" in md and "~150-300" in md and "seed 002" in md
    assert "seed 001" in md and "## Measured: xquad-en with scripted (2 questions)" in md
    assert "| completion tokens per step |" in md and "react ~150-300" in md
    assert "Reflection on top (same drafts): act: +1.00 calls" in md
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["seeds"][0]["react"] == "~150-300"
    assert paths["json"].name == "modes_scripted.json"

    # A second run with the same log resumes: nothing runs again (this model has no replies).
    again, _ = bench_modes.run_modes([("scripted", ScriptedModel([]), 1)],
                                     datasets=["xquad-en"], modes=["act", "react"],
                                     reflection=1, out_dir=tmp_path / "out",
                                     show_progress=False)
    assert again[0]["resumed"] == "4 of 4 tasks from an earlier run"
    assert again[0]["summary"] == result["summary"]


def test_cli_usage_errors_come_before_data_and_model(tmp_path):
    done = cli("bench", "modes", "--datasets", "hotpotqa,nq", "--data", str(tmp_path))
    assert done.returncode == 2 and "unknown dataset nq" in done.stderr
    done = cli("bench", "modes", "--modes", "act,cot", "--data", str(tmp_path))
    assert done.returncode == 2 and "unknown mode cot" in done.stderr
    done = cli("bench", "modes", "--datasets", "xquad-en", "--data", str(tmp_path))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "xquad-en" in done.stderr
