"""Smoke run of `agentmodes bench retrieval` on a slice of the shared data, fake embedder; and
the same corpus searched through real SQLite and PostgreSQL KBs (`--backends`)."""

import json

import psycopg
import pytest
from typer.testing import CliRunner

from agentmodes.bench.beir import load_dataset
from agentmodes.bench.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from agentmodes.bench.retrieval import run_retrieval
from agentmodes.cli.main import _register, app
from pg_support import pg_server, pg_url  # noqa: F401
from search_fakes import HashingEmbedder
from test_kb_cli import assert_one_line_error, run_cli

SYSTEMS = {"ours lexical", "ours semantic", "ours hybrid", "bm25s+stem", "rank-bm25",
           "numpy dense", "plain RRF"}


def test_metrics_on_a_hand_computed_ranking():
    relevant = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b"], relevant) == pytest.approx(1.0)
    # b at rank 1, a at rank 3: DCG = 1 + 2/log2(4) = 2; IDCG = 2 + 1/log2(3)
    assert ndcg_at_k(["b", "x", "a"], relevant) == pytest.approx(2 / (2 + 1 / 1.5849625))
    assert recall_at_k(["x", "a"], relevant, 1) == 0.0
    assert recall_at_k(["x", "a"], relevant, 2) == 0.5
    assert mrr_at_k(["x", "y", "b"], relevant) == pytest.approx(1 / 3)


def test_smoke_run_writes_json_and_markdown(tmp_path):
    try:
        load_dataset("xquad-en")
    except Exception as err:  # the shared data folder is part of the workplace
        pytest.skip(f"shared data not available: {err}")
    results = run_retrieval(["xquad-en", "hotpotqa"], HashingEmbedder(), tmp_path / "out",
                            limit=8, cache_dir=tmp_path / "cache",
                            progress=lambda msg: None)
    data = json.loads((tmp_path / "out" / "retrieval.json").read_text())
    md = (tmp_path / "out" / "retrieval.md").read_text()
    for dataset in data["datasets"]:
        rows = {row["system"]: row for row in dataset["systems"]}
        assert set(rows) == SYSTEMS
        for row in rows.values():
            assert 0.0 <= row["ndcg@10"] <= 1.0 and row["p50_ms"] > 0
        # Same analysis and BM25 parameters as the bm25s baseline: the same quality.
        assert rows["ours lexical"]["ndcg@10"] == pytest.approx(rows["bm25s+stem"]["ndcg@10"],
                                                                abs=0.02)
        assert rows["ours semantic"]["ndcg@10"] == pytest.approx(rows["numpy dense"]["ndcg@10"])
    assert {"lexical", "semantic", "hybrid"} <= {f["mode"] for f in data["confidence"]["figures"]}
    assert "| ours hybrid |" in md
    assert results["ablation"]["rows"]
    # embeddings were cached: a second run embeds nothing
    embedder = HashingEmbedder()
    run_retrieval(["xquad-en"], embedder, None, limit=8, cache_dir=tmp_path / "cache",
                  progress=lambda msg: None)
    assert embedder.passage_calls == 0


def test_cli_rejects_bad_scale_sizes_with_one_line():
    _register()
    result = CliRunner().invoke(app, ["bench", "scale", "--sizes", "ten", "--out", "/tmp/x"])
    assert result.exit_code != 0
    assert "sizes must be comma-separated chunk counts" in result.output


def test_bench_retrieval_searches_through_both_backends_side_by_side(pg_url, tmp_path):
    try:
        load_dataset("xquad-en")
    except Exception as err:  # the shared data folder is part of the workplace
        pytest.skip(f"shared data not available: {err}")
    results = run_retrieval(["xquad-en"], HashingEmbedder(), tmp_path / "out", limit=3,
                            cache_dir=tmp_path / "cache", progress=lambda msg: None,
                            backends=["sqlite", "postgresql"], kb_url=pg_url)
    rows = {row["system"]: row for row in results["datasets"][0]["systems"]}
    for mode in ("lexical", "semantic", "hybrid"):
        memory = rows[f"ours {mode}"]["ndcg@10"]
        assert rows[f"ours {mode} (sqlite)"]["ndcg@10"] == pytest.approx(memory, abs=1e-9)
        assert rows[f"ours {mode} (postgresql)"]["ndcg@10"] == pytest.approx(memory, abs=0.01)
    md = (tmp_path / "out" / "retrieval.md").read_text(encoding="utf-8")
    assert "## storage backends (nDCG@10)" in md and "| xquad-en | hybrid |" in md
    with psycopg.connect(pg_url) as conn:                 # the benchmark's KBs are dropped
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE "
                            "'kb\\_bench%%'").fetchone()[0] == 0


def test_bench_retrieval_refuses_an_unknown_backend_in_one_line(tmp_path):
    result = run_cli("bench", "retrieval", "--backends", "sqlite,oracle", "--out",
                     str(tmp_path))
    assert_one_line_error(result, "--backends takes sqlite and/or postgresql")


def test_cli_runs_the_backends_with_the_stand_in_embedder(pg_url, tmp_path):
    try:
        load_dataset("xquad-en")
    except Exception as err:  # the shared data folder is part of the workplace
        pytest.skip(f"shared data not available: {err}")
    from agentmodes.bench.codedata import data_root
    result = run_cli("bench", "retrieval", "--datasets", "xquad-en", "--limit", "2",
                     "--embedder", "stand-in", "--backends", "postgresql", "--kb-url", pg_url,
                     "--data", str(data_root(None)), "--out", str(tmp_path / "out"),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads((tmp_path / "out" / "retrieval.json").read_text(encoding="utf-8"))
    assert data["backends"] == ["postgresql"]
    assert data["datasets"][0]["embedder"] == "bench:hashed-words-384"
    assert "ours hybrid (postgresql)" in {row["system"] for row in data["datasets"][0]["systems"]}
