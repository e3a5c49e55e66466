"""The background half of uploads: every service process claims and runs queued ingest jobs.

Any worker may run any job (store/job_queue.py): it writes the job's documents from the
database into its own upload folder, ingests them into the chatbot's knowledge base, and
reports progress on the job row, where every worker's API reads it. The progress writes
double as the heartbeat that renews the lease; a separate beat keeps it alive while one
long step (a big PDF, a batch of embeddings) reports nothing. Losing the lease (this
process was too slow, another worker took over) stops the run at the next progress report.

Files go to a temp name first and are renamed into place, so a crash never leaves half a
document where the next ingest would read it. One job runs at a time per process:
ingesting is CPU-bound (embedding), and the other workers take the other jobs.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from .errors import AgentModesError, ConfigError
from .store.job_queue import DEFAULT_LEASE_SECONDS, Claim
from .store.runs import process_alive

log = logging.getLogger("agentmodes.jobs")
PROGRESS_EVERY = 0.5          # seconds between progress writes (the last one always goes)


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, not {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be more than 0 seconds")
    return value


class JobLost(Exception):
    """Our lease on the job ran out and another worker owns it now."""


# Whether the process named host:pid may still run (other hosts: assume so).
owner_alive = process_alive


class IngestWorker:
    """Claims jobs for one service (process) until stopped."""

    def __init__(self, service: Any, *, lease_seconds: Optional[float] = None,
                 poll_seconds: Optional[float] = None) -> None:
        self.service = service
        self.store = service.store
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.lease = lease_seconds or _seconds("AGENTMODES_JOB_LEASE_SECONDS",
                                               DEFAULT_LEASE_SECONDS)
        self.poll = poll_seconds or _seconds("AGENTMODES_JOB_POLL_SECONDS", 1.0)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        # Jobs left running by a dead process on this host need not wait for their lease.
        dead = [o for o in self.store.running_owners() if not owner_alive(o)]
        if self.store.expire_leases_of(dead):
            log.info("reclaiming the jobs of stopped workers %s", ", ".join(dead))
        self._thread = threading.Thread(target=self._loop, name="ingest-jobs", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                claim = self.store.claim_job(self.owner, self.lease)
            except Exception:  # noqa: BLE001 - the database may be back on the next poll
                log.exception("could not claim an ingest job")
                claim = None
            if claim is None:
                self._wake.wait(self.poll)
                self._wake.clear()
                continue
            self.run(claim)

    def run(self, claim: Claim) -> None:
        """Run one claimed job to done or failed (or stop if it is taken from us)."""
        state: dict[str, Any] = {"done": 0, "total": len(claim.files)}
        lost = threading.Event()
        beat_stop = threading.Event()

        def beat() -> None:
            while not beat_stop.wait(self.lease / 3):
                if not self.store.renew_lease(claim, self.lease):
                    lost.set()
                    return

        beater = threading.Thread(target=beat, name=f"lease-{claim.job_id[:8]}", daemon=True)
        beater.start()
        last_write = [0.0]

        def progress(phase: str, done: int, total: int, label: str = "") -> None:
            # KnowledgeBase.ingest reports phase "read" (files) then "embed" (chunks).
            new_phase = state.get("phase") != phase
            state.update(phase=phase, done=done, total=total, current=Path(label).name)
            now = time.monotonic()
            if lost.is_set():
                raise JobLost()
            if new_phase or done == total or now - last_write[0] >= PROGRESS_EVERY:
                last_write[0] = now
                if not self.store.renew_lease(claim, self.lease, progress=dict(state)):
                    lost.set()
                    raise JobLost()

        try:
            bot = self.store.get_chatbot_by_id(claim.chatbot_id)
            paths = self._materialise(bot, claim.files)
            report = self.service.knowledge(bot).ingest(paths, progress=progress)
            as_dict = report.as_dict() if hasattr(report, "as_dict") else dict(report)
            self.store.finish_job(claim, "done", report=relative_report(as_dict),
                                  progress={**state, "phase": "done", "current": ""})
        except JobLost:
            log.warning("ingest job %s was taken over by another worker", claim.job_id)
        except Exception as err:  # noqa: BLE001 - one failed job must not stop the worker
            log.exception("ingest job %s failed", claim.job_id)
            message = str(err) if isinstance(err, AgentModesError) else \
                f"internal error ({type(err).__name__})"
            self.store.finish_job(claim, "failed", error=message)
        finally:
            beat_stop.set()

    def _materialise(self, bot: Any, names: list[str]) -> list[str]:
        """The job's documents as files in this worker's upload folder (same names on every
        worker, so a document keeps one identity in the KB whoever ingests it)."""
        folder = self.service.upload_dir(bot)
        paths = []
        for name in names:
            content = self.store.document_content(bot.id, name)
            if content is None:
                continue              # replaced or deleted meanwhile: nothing to ingest
            if Path(name).name != name or name.startswith("."):
                raise AgentModesError(f"stored document name {name!r} is not a plain file name")
            path = folder / name
            if not path.is_file() or path.read_bytes() != content:
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
                os.replace(tmp, path)
            paths.append(str(path))
        return paths


def relative_report(report: dict[str, Any]) -> dict[str, Any]:
    """File names only: a client never learns the server's directory layout."""
    def name(value: Any) -> Any:
        if isinstance(value, str):
            return Path(value).name
        if isinstance(value, dict) and "path" in value:
            return {**value, "path": Path(value["path"]).name}
        return value
    return {k: [name(v) for v in vals] if isinstance(vals, list) else vals
            for k, vals in report.items()}
