"""`bench scale --backends ... postgresql` and `bench pg-hnsw` on the suite's real PostgreSQL:
the user's path (a KB at a postgresql:// URL, fresh processes) and the threshold measurement."""

import json

import pytest

from agentmodes.bench.beir import load_dataset
from agentmodes.bench.pg_hnsw import suggested_threshold
from pg_support import pg_server, pg_url  # noqa: F401
from test_kb_cli import assert_one_line_error, run_cli


def _shared_data():
    try:
        load_dataset("xquad-en")
    except Exception as err:  # the shared data folder is part of the workplace
        pytest.skip(f"shared data not available: {err}")
    from agentmodes.bench.codedata import data_root
    return str(data_root(None))


@pytest.mark.slow
def test_bench_scale_measures_a_postgresql_kb_beside_sqlite(pg_url, tmp_path):
    data = _shared_data()
    result = run_cli("bench", "scale", "--sizes", "1000", "--backends", "sqlite,postgresql",
                     "--pg-url", pg_url, "--no-peers", "--queries", "10", "--work",
                     str(tmp_path / "work"), "--data", data, "--out", str(tmp_path / "out"),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads((tmp_path / "out" / "scale_postgresql.json").read_text(encoding="utf-8"))
    pg, lite = out["postgresql"][0], out["sizes"][0]
    assert pg["chunks"] == lite["chunks"] == 1000
    assert pg["cold"]["open_first_search_s"] > 0 and pg["add"]["found_after_add"]
    assert pg["add"]["gone_after_remove"]
    assert pg["warm"]["recall"]["note"].startswith("exact")     # 1k: below the threshold
    md = (tmp_path / "out" / "scale_postgresql.md").read_text(encoding="utf-8")
    assert "| 1,000 | hybrid p50 ms |" in md and "ratio" in md
    assert (tmp_path / "out" / "scale.md").is_file()              # SQLite's own report


def test_bench_scale_refuses_an_unknown_backend_in_one_line(tmp_path):
    result = run_cli("bench", "scale", "--sizes", "1000", "--backends", "sqlite,oracle",
                     "--out", str(tmp_path))
    assert_one_line_error(result, "--backends takes sqlite and/or postgresql")


def test_bench_pg_hnsw_times_exact_scans_against_the_kbs_index(pg_url, tmp_path):
    data = _shared_data()
    result = run_cli("bench", "pg-hnsw", "--sizes", "1000", "--queries", "10", "--pg-url",
                     pg_url, "--work", str(tmp_path / "work"), "--data", data, "--out",
                     str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads((tmp_path / "out" / "pg_hnsw.json").read_text())["sizes"][0]
    assert row["vectors"] == 1000 and row["queries"] == 10
    assert 0.5 <= row["recall_at_10"] <= 1.0 and row["index_mb"] > 0
    # the forced index walk touches other pages than the scan of all 1,000 vectors
    assert row["exact_buffers"] != row["hnsw_buffers"]


def test_the_threshold_is_where_hnsw_wins_from_then_on():
    def row(n, exact, hnsw, planned=True):
        return {"vectors": n, "exact_p50_ms": exact, "hnsw_p50_ms": hnsw,
                "planner_uses_index": planned}
    rows = [row(1000, 1, 2), row(5000, 3, 4), row(10000, 6, 5), row(20000, 12, 6),
            row(50000, 30, 7)]
    assert suggested_threshold(rows) == 10000
    assert suggested_threshold([*rows[:2], row(10000, 6, 5), row(20000, 12, 13),
                                row(50000, 30, 7)]) == 50000
    assert suggested_threshold(rows[:2]) is None
    # faster, but the planner would scan the table anyway: building the index buys nothing
    assert suggested_threshold([row(5000, 16, 11, planned=False), *rows[2:]]) == 10000
