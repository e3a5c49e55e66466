"""The resumable run log and the thread pool behind every LLM benchmark."""

from __future__ import annotations

import json
import threading

from agentmodes.bench.runs import Job, RunLog, run_jobs, slug


def test_parallel_jobs_each_logged_once_in_job_order(tmp_path):
    log = RunLog(tmp_path / "runs" / "x.jsonl")
    threads = set()
    barrier = threading.Barrier(3, timeout=10)   # proves three jobs really ran at once

    def work(job: Job) -> dict:
        threads.add(threading.get_ident())
        if int(job.task_id) < 3:
            barrier.wait()
        return {"value": int(job.task_id) * 2}

    jobs = [Job(str(i), "v") for i in range(9)]
    records = run_jobs(jobs, work, log, workers=3, show_progress=False)
    assert [r["value"] for r in records] == [i * 2 for i in range(9)]
    assert len(threads) >= 3
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert sorted(int(r["task_id"]) for r in lines) == list(range(9))
    assert all("time_s" in r and r["variant"] == "v" for r in lines)


def test_failures_are_recorded_and_retried(tmp_path):
    log = RunLog(tmp_path / "x.jsonl")
    calls = []

    def flaky(job: Job) -> dict:
        calls.append(job.task_id)
        if job.task_id == "b" and calls.count("b") == 1:
            raise TimeoutError("backend timed out")
        return {"ok": True}

    first = run_jobs([Job("a", "v"), Job("b", "v")], flaky, log, show_progress=False)
    assert first[1]["error"] == "TimeoutError: backend timed out" and "traceback" in first[1]
    second = run_jobs([Job("a", "v"), Job("b", "v")], flaky, log, show_progress=False)
    assert calls == ["a", "b", "b"] and second[1]["ok"] is True
    assert set(log.done()) == {"v::a", "v::b"}


def test_slug():
    assert slug("openai:gpt-4o-mini") == "openai-gpt-4o-mini"
    assert slug("/models/x y.gguf") == "models-x-y.gguf"


def test_a_job_finished_by_another_process_meanwhile_is_skipped(tmp_path):
    log = RunLog(tmp_path / "shared.jsonl")
    other = RunLog(tmp_path / "shared.jsonl")        # a second process on the same file
    done_by_us = []

    def work(job: Job) -> dict:
        done_by_us.append(job.task_id)
        if job.task_id == "a":
            other.append({"task_id": "b", "variant": "v", "by": "other"})
        return {"by": "us"}

    records = run_jobs([Job("a", "v"), Job("b", "v")], work, log, show_progress=False)
    assert done_by_us == ["a"] and records[1]["by"] == "other"


def test_resume_is_announced_and_fresh_keeps_the_old_log_aside(tmp_path):
    import io

    from rich.console import Console

    path = tmp_path / "runs" / "bench" / "model.jsonl"
    jobs = [Job(str(i), "v") for i in range(3)]
    run_jobs(jobs[:2], lambda job: {"value": 1}, RunLog(path), show_progress=False)

    said = io.StringIO()
    calls = []
    records = run_jobs(jobs, lambda job: calls.append(job.task_id) or {"value": 2},
                       RunLog(path), console=Console(file=said, width=200))
    assert calls == ["2"]                                    # only the unfinished task ran
    assert f"resuming {path}: 2 of 3 tasks already done (--fresh runs them again)" \
        in said.getvalue()
    assert [r.get("resumed", False) for r in records] == [True, True, False]

    fresh = RunLog(path, fresh=True)
    assert fresh.set_aside is not None and fresh.set_aside.name.startswith("model.before-")
    assert len(fresh.set_aside.read_text().splitlines()) == 3    # nothing was thrown away
    calls.clear()
    records = run_jobs(jobs, lambda job: calls.append(job.task_id) or {"value": 3}, fresh,
                       show_progress=False)
    assert calls == ["0", "1", "2"] and not any(r.get("resumed") for r in records)


def test_results_go_to_a_user_folder_unless_out_names_one(tmp_path, monkeypatch):
    from agentmodes.bench.results import COMMITTED_RESULTS, default_results_dir, results_dir

    monkeypatch.delenv("AGENTMODES_RESULTS", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_results_dir() == tmp_path / "xdg" / "agentmodes" / "bench"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_results_dir() == tmp_path / "home" / ".local" / "share" / "agentmodes" / "bench"
    monkeypatch.setenv("AGENTMODES_RESULTS", str(tmp_path / "env"))
    assert results_dir(None) == tmp_path / "env"
    assert results_dir(tmp_path / "mine") == tmp_path / "mine"
    assert COMMITTED_RESULTS not in (results_dir(None), default_results_dir())
