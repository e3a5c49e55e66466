"""The ALFWorld command a user with a capable model runs, tested against a real
OpenAI-compatible server: llama.cpp's server with the embedded model, on loopback, driven
through the CLI in a fresh process (`--llm openai:MODEL`, OPENAI_BASE_URL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from alfworld_support import needs_data, needs_engine
from llama_server_support import llama_server

pytestmark = [needs_data, needs_engine, pytest.mark.slow, pytest.mark.llm]


def test_the_bench_command_against_a_llama_cpp_server(tmp_path):
    with llama_server(tmp_path, n_ctx=8192) as url:
        env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "none",
               "OPENAI_GRAMMAR": "1"}
        proc = subprocess.run(
            [sys.executable, "-m", "agentmodes", "bench", "alfworld", "--modes", "react",
             "--limit", "1", "--max-steps", "3", "--llm", "openai:smollm2", "--json",
             "--out", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    row = result["summary"][0]
    assert row["variant"] == "react" and row["tasks"] == 1 and row["errors"] == 0
    assert row["llm_calls_per_task"] == 3 and row["steps_per_game"] == 3
    # The server saw the papers' two few-shot trajectories (well over a thousand tokens).
    assert row["tokens_per_task"] > 3000
    report = json.loads(open(result["files"]["json"], encoding="utf-8").read())
    log = json.loads(open(report["tasks"][0]["log"], encoding="utf-8").read())
    # The forwarded grammar made every step a readable command.
    assert [bool(s.get("param")) for s in log["steps"]] == [True] * 3
