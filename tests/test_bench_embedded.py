"""`agentmodes bench prefix-reuse | wellformed` as a user runs them (real model, tiny sizes)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentmodes.bench.embedded import judge
from data_support import HOTPOTQA, needs_data


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           *args], capture_output=True, text=True, timeout=300)


def test_judge_separates_tolerant_parsing_from_the_strict_format():
    seed_style = 'REFLECTION: I know nothing yet.\nACTION: rag_search("VIVA Media")'
    assert judge(seed_style, "reflact") == {"parsed": True, "strict": True, "error": None}
    paper_style = "Thought 1: I should search.\nAction 1: Search[VIVA Media]"
    verdict = judge(paper_style, "reflact")
    assert verdict["parsed"] and not verdict["strict"]
    assert judge("The answer is Paris.", "reflact")["parsed"] is False
    assert judge('ACTION: respond("Paris")', "act")["strict"]


@pytest.mark.llm
@needs_data(HOTPOTQA)
@pytest.mark.slow        # four evaluations of the ~400-token system prompt: about 30 s here
def test_prefix_reuse_command_writes_its_measurement(tmp_path):
    result = run_cli("bench", "prefix-reuse", "--iterations", "2", "--max-tokens", "8",
                     "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "embedded_prefix_reuse.json").read_text())
    without = report["variants"]["without prefix reuse"]
    with_ = report["variants"]["with prefix reuse"]
    assert without["prompt_tokens"] == with_["prompt_tokens"]      # the same prompts
    assert with_["evaluated_tokens"] < without["evaluated_tokens"]
    assert with_["llama_n_p_eval"] == with_["evaluated_tokens"]    # llama.cpp agrees
    assert "fewer** with reuse" in (tmp_path / "embedded_prefix_reuse.md").read_text()


@pytest.mark.llm
@needs_data(HOTPOTQA)
def test_wellformed_command_on_one_question(tmp_path):
    result = run_cli("bench", "wellformed", "--limit", "1", "--mode", "act",
                     "--max-tokens", "64", "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "embedded_wellformed_act.json").read_text())
    assert report["variants"]["with grammar"]["parsed"] == 1
    assert "| with grammar | 1/1 (100%)" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["wellformed", "--mode", "reflexion"], "--mode must be one of reflact, react, act"),
    (["wellformed", "--limit", "0"], "--limit must be at least 1"),
    (["prefix-reuse", "--iterations", "1"], "--iterations must be at least 2")])
def test_bad_options_are_one_line_errors(args, message, tmp_path):
    result = run_cli("bench", *args, "--out-dir", str(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
