"""`agentmodes bench humaneval` as a user runs it: results under the user's folder (never
the committed benchmarks/results/), resuming said out loud, --fresh starting over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from data_support import HUMANEVAL, needs_data

PROJECT = Path(__file__).resolve().parents[1]
pytestmark = needs_data(HUMANEVAL)


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("AGENTMODES_RESULTS", None)
    return subprocess.run([sys.executable, "-m", "agentmodes", "bench", "humaneval", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_default_folder_resume_and_fresh(tmp_path):
    replies = tmp_path / "replies.json"
    code = "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"
    replies.write_text(json.dumps([code] * 4), encoding="utf-8")
    committed = {p: p.stat().st_mtime_ns for p in (PROJECT / "benchmarks" / "results").rglob("*")
                 if p.is_file()}
    args = ("--strategy", "simple", "--limit", "1", "--llm", "scripted:replies.json")   # cwd=tmp_path

    first = bench(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "xdg" / "agentmodes" / "bench"
    summary = json.loads((out / "humaneval_scripted-replies.json_limit1.json").read_text())
    assert summary["summary"][0]["tasks"] == 1 and summary["meta"]["resumed"] == "no"
    assert (out / "runs" / "humaneval" / "scripted-replies.json.jsonl").is_file()
    assert "resuming" not in first.stderr
    assert "simple" in first.stdout and "pass@1" in first.stdout     # the table, whole

    again = bench(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stderr and "1 of 1 tasks already done" in again.stderr
    summary = json.loads((out / "humaneval_scripted-replies.json_limit1.json").read_text())
    assert summary["meta"]["resumed"] == "1 of 1 tasks from an earlier run"

    fresh = bench(tmp_path, *args, "--fresh", "--json")
    assert fresh.returncode == 0, fresh.stderr
    line = json.loads(fresh.stdout)
    assert line["type"] == "result" and line["meta"]["resumed"] == "no"
    assert list((out / "runs" / "humaneval").glob("scripted-replies.json.before-*.jsonl"))

    # None of this touched the committed results.
    assert {p: p.stat().st_mtime_ns for p in committed} == committed
