"""`bench answers` (bench/answers.py): its scoring, and a run end to end on XQuAD-en."""

import json
from pathlib import Path

import pytest

from agentmodes.bench.answer_data import BENCH_SAMPLE, QA, QASet
from agentmodes.bench.answers import (SentenceBaseline, cited_passages, first_sentence, score,
                                      spread)

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


def test_the_calibration_split_never_holds_a_bench_question():
    qa = QASet("t", {}, [QA(f"q{i}", f"Q{i}?", ("a",), frozenset(), "t") for i in range(400)])
    bench = {q.id for q in qa.split("bench", BENCH_SAMPLE)}
    calibration = [q.id for q in qa.split("calibration", 100)]
    assert len(bench) == BENCH_SAMPLE and len(set(calibration)) == 100
    assert not bench & set(calibration)
    assert {q.id for q in qa.split("bench", 20)} <= bench | {"q0"}   # a shorter bench run


def test_a_stopped_run_has_done_questions_from_the_whole_sample():
    order = spread(list(range(240)))
    assert sorted(order) == list(range(240))                         # every question, once
    assert max(order[:24]) >= 200 and len({i // 24 for i in order[:24]}) == 10


def test_a_logged_run_is_recomposed_as_its_loop_composed_it(tmp_path):
    """--recompose must read a logged answer as the live loop did: the mode's own prompt is
    what a copied line is recognised against (a composer without it keeps the line)."""
    from agent_fakes import done_of, make_agent

    from agentmodes.bench.answers import RunComposer, settings_for
    from agentmodes.knowledge.base import KnowledgeBase
    from agentmodes.modes.compose import Composer

    question = "When is the DG Agentur office open?"
    copied = "Where do I stand relative to the goal?"          # from the ReflAct prompt
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.ingest(Path(__file__).resolve().parents[1] / "examples")
        agent, _ = make_agent(['REFLECTION: Searching.\nACTION: rag_search("opening hours")',
                               f"REFLECTION: Done.\nFINAL ANSWER: {copied} "
                               "The office opens at 9 am [1]."],
                              kb=kb, **settings_for("xquad-en", "reflact").model_dump())
        done = done_of(list(agent.stream(question)))
        logged = [{"n": i, "title": s["title"], "text": s["text"],
                   "confidence": round(s["confidence"], 4)}
                  for i, s in enumerate(done["sources"], start=1)]
        composer = Composer(embedder=lambda: kb.embedder)
        composition, _ = RunComposer(composer, kb, "xquad-en").compose(
            done["model_answer"], question, "reflact", logged)
        again = composition.text
        assert copied in done["model_answer"] and copied not in done["full_response"]
        assert again == done["full_response"]


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
