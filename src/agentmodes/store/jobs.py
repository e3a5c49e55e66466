"""Ingest jobs: an upload's background ingest, its progress and its report.

Each job records the process running it (host:pid), so that a restarted server can tell
its own dead jobs from those of a second live process on the same database.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import (JSON, Column, DateTime, ForeignKey, Integer, String, Table, Text, insert,
                        select, update)

from .engine import metadata
from .errors import NotFoundError

JOB_STATUSES = ("queued", "running", "done", "failed")

ingest_jobs = Table(
    "ingest_jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("chatbot_id", Integer, ForeignKey("chatbots.id", ondelete="CASCADE"), nullable=False),
    Column("status", String(16), nullable=False, default="queued"),
    Column("files", JSON, nullable=False),
    Column("progress", JSON, nullable=False),           # {"done": n, "total": m, "current": path}
    Column("report", JSON, nullable=True),
    Column("error", Text, nullable=True),
    # host:pid of the process running it, so a restarted server can tell its own dead jobs
    # from those of a second live process on the same file.
    Column("owner", String(300), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def this_process() -> str:
    """host:pid of the calling process (computed per call: server workers are forked)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: Optional[str]) -> bool:
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True                 # another machine's job: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(value: Optional[datetime]) -> Optional[str]:
    if value is None:
        return None
    return (value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value).isoformat()


@dataclass(slots=True)
class IngestJob:
    id: str
    chatbot_id: int
    status: str
    files: list[str]
    progress: dict[str, Any] = field(default_factory=dict)
    report: Optional[dict] = None
    error: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None


def _job(row) -> IngestJob:
    return IngestJob(row.id, row.chatbot_id, row.status, list(row.files or []),
                     dict(row.progress or {}), row.report, row.error,
                     _stamp(row.created_at), _stamp(row.updated_at))



class IngestJobs:
    """The job half of ChatStore (it needs `self.engine` and `get_job`'s NotFoundError)."""

    def create_job(self, chatbot: Any, files: list[str]) -> IngestJob:
        now = _now()
        job_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            conn.execute(insert(ingest_jobs).values(
                id=job_id, chatbot_id=chatbot.id, status="queued", files=files, owner=this_process(),
                progress={"done": 0, "total": len(files)}, created_at=now, updated_at=now))
        return self.get_job(job_id)

    def update_job(self, job_id: str, **changes: Any) -> None:
        values = {k: v for k, v in changes.items()
                  if k in {"status", "progress", "report", "error"}}
        with self.engine.begin() as conn:
            conn.execute(update(ingest_jobs).where(ingest_jobs.c.id == job_id)
                         .values(**values, updated_at=_now()))

    def get_job(self, job_id: str) -> IngestJob:
        with self.engine.connect() as conn:
            row = conn.execute(select(ingest_jobs).where(ingest_jobs.c.id == job_id)).first()
        if row is None:
            raise NotFoundError(f"no ingest job {job_id!r}")
        return _job(row)

    def list_jobs(self, chatbot: Any) -> list[IngestJob]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(ingest_jobs).where(ingest_jobs.c.chatbot_id == chatbot.id)
                                .order_by(ingest_jobs.c.created_at.desc())).all()
        return [_job(r) for r in rows]

    def fail_orphaned_jobs(self) -> int:
        """Mark unfinished jobs whose process is gone as failed (run at server start)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(ingest_jobs.c.id, ingest_jobs.c.owner).where(
                ingest_jobs.c.status.in_(("queued", "running")))).all()
        orphans = [r.id for r in rows if not _owner_alive(r.owner)]
        for job_id in orphans:
            self.update_job(job_id, status="failed",
                            error="the server stopped before this job finished; upload again")
        return len(orphans)
