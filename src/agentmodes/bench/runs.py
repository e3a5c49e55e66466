"""Resumable, parallel benchmark runs: one JSON line per finished task.

LLM benchmarks take hours and get interrupted. Each finished (task, variant) appends its
record to a JSONL file under <results folder>/runs/<benchmark>/<run>.jsonl, flushed at
once; a rerun with the same run name reads the file, says that it resumes, and skips what
is done. `fresh=True` (`--fresh`) moves the old log aside and runs everything again. A task
whose run raised is recorded with an "error" and retried on the next run (it is not "done").
Tasks run in a thread pool: useful for HTTP backends, where the time is spent waiting;
the embedded model runs one call at a time anyway, so callers pass workers=1 for it.
Several processes may share one log (e.g. one per variant order): each re-reads it before
a job and skips what another process finished meanwhile.
"""

from __future__ import annotations

import json
import re
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn,
                           TimeRemainingColumn)

from ..errors import ConfigError
from .results import PROJECT_ROOT, results_dir  # noqa: F401  (re-exported for the runners)


def slug(text: str) -> str:
    """A file-name-safe form of an LLM spec or label ("openai:gpt-4o" -> "openai-gpt-4o")."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-")[:80] or "default"


def parse_names(text: str | Sequence[str], known: Sequence[str], what: str) -> list[str]:
    """A comma-separated choice of variants ("simple,reflexion"), checked and deduplicated."""
    names = [s.strip().lower() for s in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConfigError(f"unknown {what} {', '.join(unknown) or '(none)'}; "
                          f"use {', '.join(known)} (comma-separated)")
    return list(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of work: a task under one variant (strategy or mode)."""

    task_id: str
    variant: str
    payload: Any = None

    @property
    def key(self) -> str:
        return f"{self.variant}::{self.task_id}"


class RunLog:
    """The append-only JSONL of one run, safe to append to from several threads.

    fresh=True starts over: an existing log is renamed to `<name>.before-<UTC time>.jsonl`
    (kept, never deleted: it may hold hours of work) and `set_aside` names it."""

    def __init__(self, path: Path, *, fresh: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.set_aside: Optional[Path] = None
        if fresh and self.path.exists():
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            self.set_aside = self.path.with_name(f"{self.path.stem}.before-{stamp}.jsonl")
            self.path.rename(self.set_aside)

    def records(self) -> list[dict]:
        """Every readable record; a torn last line (the process was killed mid-write) is
        skipped, so the task it belonged to simply runs again."""
        if not self.path.exists():
            return []
        out = []
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "task_id" in record and "variant" in record:
                    out.append(record)
        return out

    def done(self) -> dict[str, dict]:
        """The newest successful record per job key."""
        return {f"{r['variant']}::{r['task_id']}": r for r in self.records() if not r.get("error")}

    def append(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()


def run_jobs(jobs: Iterable[Job], work: Callable[[Job], dict], log: RunLog, *,
             workers: int = 1, description: str = "", show_progress: bool = True,
             console: Optional[Console] = None) -> list[dict]:
    """Run the jobs not yet in the log; return the final record of every job (old and new),
    in job order. Records taken from an earlier run carry "resumed": True (in the returned
    list only), and resuming is announced on the console unless show_progress is off.
    One job's exception becomes that job's error record, never the run's end."""
    jobs = list(jobs)
    done = log.done()
    todo = [j for j in jobs if j.key not in done]
    results: dict[str, dict] = {j.key: {**done[j.key], "resumed": True}
                                for j in jobs if j.key in done}
    console = console or Console(stderr=True)
    if show_progress and log.set_aside is not None:
        console.print(f"[dim]--fresh: the earlier run log is kept as {log.set_aside}[/]")
    if show_progress and results:
        console.print(f"resuming {log.path}: {len(results)} of {len(jobs)} tasks already "
                      "done (--fresh runs them again)", highlight=False)

    def one(job: Job) -> dict:
        finished = log.done().get(job.key)     # another process on the same log did it
        if finished is not None:
            return finished
        started = time.perf_counter()
        try:
            record = dict(work(job))
        except KeyboardInterrupt:
            raise
        except Exception as err:  # recorded, retried on the next run
            record = {"error": f"{type(err).__name__}: {err}",
                      "traceback": traceback.format_exc(limit=4)}
        record.setdefault("time_s", round(time.perf_counter() - started, 3))
        record.update(task_id=job.task_id, variant=job.variant)
        log.append(record)
        return record

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console,
                  disable=not show_progress, transient=False) as bar:
        progress = bar.add_task(description or log.path.stem, total=len(jobs),
                                completed=len(jobs) - len(todo))
        if workers <= 1:
            for job in todo:
                results[job.key] = one(job)
                bar.advance(progress)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(one, job): job for job in todo}
                for future in as_completed(futures):
                    results[futures[future].key] = future.result()
                    bar.advance(progress)
    return [results[j.key] for j in jobs]


def resumed_note(records: Sequence[dict]) -> str:
    """For a report's meta: how many results came from an earlier run of the same log."""
    resumed = sum(1 for r in records if r.get("resumed"))
    return f"{resumed} of {len(records)} tasks from an earlier run" if resumed else "no"
