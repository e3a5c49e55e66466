"""`agentmodes bench server` on a small load: every message answered and persisted, and the
JSON + Markdown reports written."""

from __future__ import annotations

import json
import subprocess
import sys

from pg_support import pg_server, pg_url  # noqa: F401
from server_support import ROOT


def test_bench_server_small_run_writes_reports(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "bench", "server",
         "--levels", "1,3", "--messages", "2", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "server_load.json").read_text())
    server_rows = [r for r in report["rows"] if r["label"].startswith("server")]
    assert [r["concurrency"] for r in server_rows] == [1, 3]
    assert [r["messages"] for r in server_rows] == [2, 6]
    assert all(r["errors"] == 0 and r["persisted"] == r["messages"] for r in report["rows"])
    assert all(r["ttfe_p95_ms"] >= r["ttfe_p50_ms"] > 0 for r in server_rows)
    table = (tmp_path / "server_load.md").read_text()
    assert "| server (SQLite, 1 worker), 3 concurrent WebSocket chats | 6 | 0 | 6 |" in table
    assert "x vs in-process" in table and table in result.stdout


def test_bench_server_compares_workers_on_postgresql_and_sqlite(tmp_path, pg_url):
    result = subprocess.run(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "bench", "server",
         "--levels", "2", "--messages", "2", "--db", pg_url, "--workers", "1,2",
         "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "server_load.json").read_text())["rows"]
    setups = [(r["database"], r["workers"]) for r in rows]
    assert setups == [("in-process", 1), ("sqlite", 1), ("sqlite", 2), ("postgresql", 1),
                      ("postgresql", 2)]
    assert all(r["errors"] == 0 and r["persisted"] == r["messages"] for r in rows)
    assert rows[4]["throughput_vs_sqlite_1_worker"] > 0
    assert "| server (PostgreSQL, 2 workers), 2 concurrent WebSocket chats | 4 | 0 | 4 |" in \
        (tmp_path / "server_load.md").read_text()


def test_bench_server_rejects_bad_levels(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "bench", "server",
         "--levels", "one", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 2 and "--levels takes whole numbers" in result.stderr
    assert "Traceback" not in result.stderr
