"""`agentmodes bench server` on a small load: every message answered and persisted, and the
JSON + Markdown reports written."""

from __future__ import annotations

import json
import subprocess
import sys

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
    assert "| server, 3 concurrent WebSocket chats | 6 | 0 | 6 |" in table
    assert "x vs in-process" in table and table in result.stdout


def test_bench_server_rejects_bad_levels(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "bench", "server",
         "--levels", "one", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 2 and "--levels takes whole numbers" in result.stderr
    assert "Traceback" not in result.stderr
