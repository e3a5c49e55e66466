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
