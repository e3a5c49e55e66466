"""`bench answers` (bench/answers.py): its scoring, and a run end to end on XQuAD-en."""

import json
from pathlib import Path

import pytest

from agentmodes.bench.answer_data import QASet
from agentmodes.bench.answers import SentenceBaseline, cited_passages, first_sentence, score

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_scoring_reads_the_lead_the_citations_and_the_first_sentence():
    sources = [{"n": 1, "passage": "p1"}, {"n": 2, "passage": "p2"}]
    text = "The Panthers gave up just 308 points. [2] They ranked sixth."
    cited = cited_passages(text, sources)
    assert cited == {"p2"} and first_sentence(text) == "The Panthers gave up just 308 points."
    hit = score(text, cited, ["308"], {"p2"})
    assert hit["in_lead"] and hit["cites_gold"] and hit["both"] and hit["f1_first"] > 0
    assert not score(text, cited, ["308"], {"p1"})["both"]          # right words, wrong page
    late = "x " * 160 + "308 [2]"                                     # past 300 characters
    assert not score(late, {"p2"}, ["308"], {"p2"})["in_lead"]
    assert not score("3080 points [2]", {"p2"}, ["308"], {"p2"})["in_lead"]   # whole tokens


def test_the_bm25_baseline_answers_with_its_top_sentence():
    qa = QASet("t", {"a": ("A", "Cats sleep a lot. The Broncos won Super Bowl 50."),
                     "b": ("B", "Dogs bark.")}, [])
    text, pid = SentenceBaseline(qa).answer("Who won Super Bowl 50?")
    assert text == "The Broncos won Super Bowl 50. [1]" and pid == "a"


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "xquad-en" / "beir").is_dir(),
                    reason="../shared/data/xquad-en is not available")
def test_bench_answers_end_to_end_on_xquad(tmp_path):
    from typer.testing import CliRunner

    from agentmodes.cli.main import _register, app

    _register()
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(['ACTION: respond("I do not know [1].")'] * 20))
    result = CliRunner().invoke(app, [
        "bench", "answers", "--datasets", "xquad-en", "--limit", "2", "--modes", "act",
        "--llm", f"scripted:{replies}", "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    files = list((tmp_path / "out").glob("answers_xquad-en_*_limit2.json"))
    report = json.loads(files[0].read_text())
    variants = {r["variant"] for r in report["summary"]}
    assert variants == {"act: model", "act: composed", "act: extractive",
                        "bm25-sentence (no agent)"}
    model = next(r for r in report["summary"] if r["variant"] == "act: model")
    assert model["both"] == 0.0 and model["tasks"] == 2       # "I do not know" never scores
    log = tmp_path / "out" / "runs" / "answers"
    assert len(list(log.glob("*.jsonl"))[0].read_text().splitlines()) == 2
