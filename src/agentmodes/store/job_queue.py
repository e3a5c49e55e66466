"""The ingest queue: uploaded documents and the jobs that ingest them, shared by all workers.

An upload stores its files as rows (`chatbot_documents`) and one `ingest_jobs` row in the
same transaction, so any worker on any host can run the job: nothing lives only on the disk
of the worker that took the request. A worker claims the oldest runnable job with one
statement, `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING`
(the standard PostgreSQL queue; on SQLite the single writer lock makes the same statement
atomic), and holds a lease that its heartbeat renews. A job whose lease ran out (its worker
died or hung) is runnable again and is claimed by another worker; ingest is incremental by
content hash, so a re-run redoes only what the dead worker had not committed. After
MAX_ATTEMPTS claims a job is failed instead, so one poisonous file cannot kill every worker
in turn. Every update a worker makes is guarded by (owner, attempts) of its claim: a worker
that lost its lease learns so and stops instead of overwriting its successor's progress.

Lease times are compared on the database's clock, never a worker's, so hosts with skewed
clocks agree on when a lease expired.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import (Column, DateTime, Float, ForeignKey, Integer, LargeBinary, String,
                        Table, and_, delete, insert, or_, select, update)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from .engine import metadata

MAX_ATTEMPTS = 3
DEFAULT_LEASE_SECONDS = 30.0

chatbot_documents = Table(
    "chatbot_documents", metadata,
    Column("chatbot_id", Integer, ForeignKey("chatbots.id", ondelete="CASCADE"),
           primary_key=True),
    Column("name", String(200), primary_key=True),        # the upload's safe file name
    Column("content", LargeBinary, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


class epoch_now(FunctionElement):
    """Seconds since 1970 on the database server's clock (a float)."""
    type = Float()
    inherit_cache = True


@compiles(epoch_now, "postgresql")
def _pg_epoch(_element, _compiler, **_kw) -> str:
    return "EXTRACT(EPOCH FROM clock_timestamp())::float8"


@compiles(epoch_now, "sqlite")
def _sqlite_epoch(_element, _compiler, **_kw) -> str:
    return "((julianday('now') - 2440587.5) * 86400.0)"


@dataclass(frozen=True, slots=True)
class Claim:
    """A job this worker holds: its id, the files to ingest and the claim's identity."""

    job_id: str
    chatbot_id: int
    files: list[str]
    owner: str
    attempts: int


@dataclass(frozen=True, slots=True)
class StoredDocument:
    name: str
    size: int
    sha256: str
    updated_at: Optional[str] = None


def _now() -> datetime:
    return datetime.now(timezone.utc)


class JobQueue:
    """Queue operations on the chat database (`self.engine`); mixed into ChatStore."""

    engine: Any

    # uploads ----------------------------------------------------------------------------
    def enqueue_upload(self, chatbot: Any, files: list[tuple[str, bytes]], owner: str) -> str:
        """Store the files as the chatbot's documents and queue one job that ingests them,
        in one transaction (a failed upload leaves neither). Returns the job id."""
        now = _now()
        job_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            for name, content in files:
                conn.execute(delete(chatbot_documents).where(
                    chatbot_documents.c.chatbot_id == chatbot.id,
                    chatbot_documents.c.name == name))
                conn.execute(insert(chatbot_documents).values(
                    chatbot_id=chatbot.id, name=name, content=content, size=len(content),
                    sha256=hashlib.sha256(content).hexdigest(), updated_at=now))
            conn.execute(insert(self._jobs).values(
                id=job_id, chatbot_id=chatbot.id, status="queued",
                files=[name for name, _ in files], owner=owner, attempts=0,
                progress={"done": 0, "total": len(files)}, created_at=now, updated_at=now))
        return job_id

    def documents(self, chatbot: Any) -> list[StoredDocument]:
        c = chatbot_documents.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.name, c.size, c.sha256, c.updated_at)
                                .where(c.chatbot_id == chatbot.id).order_by(c.name)).all()
        return [StoredDocument(r.name, r.size, r.sha256, _stamp(r.updated_at)) for r in rows]

    def document_content(self, chatbot_id: int, name: str) -> Optional[bytes]:
        c = chatbot_documents.c
        with self.engine.connect() as conn:
            row = conn.execute(select(c.content).where(c.chatbot_id == chatbot_id,
                                                       c.name == name)).first()
        return bytes(row.content) if row else None

    # claiming ---------------------------------------------------------------------------
    def claim_job(self, owner: str, lease_seconds: float = DEFAULT_LEASE_SECONDS
                  ) -> Optional[Claim]:
        """The oldest runnable job, now leased to `owner`; None if there is none."""
        jobs = self._jobs
        self._fail_exhausted()
        runnable = or_(jobs.c.status == "queued",
                       and_(jobs.c.status == "running",
                            or_(jobs.c.lease_expires.is_(None),
                                jobs.c.lease_expires < epoch_now())))
        oldest = (select(jobs.c.id).where(runnable, jobs.c.attempts < MAX_ATTEMPTS)
                  .order_by(jobs.c.created_at).limit(1)
                  .with_for_update(skip_locked=True).scalar_subquery())
        statement = (update(jobs).where(jobs.c.id == oldest)
                     .values(status="running", owner=owner, attempts=jobs.c.attempts + 1,
                             lease_expires=epoch_now() + lease_seconds, updated_at=_now())
                     .returning(jobs.c.id, jobs.c.chatbot_id, jobs.c.files, jobs.c.attempts))
        with self.engine.begin() as conn:
            row = conn.execute(statement).first()
        if row is None:
            return None
        return Claim(row.id, row.chatbot_id, list(row.files or []), owner, row.attempts)

    def _fail_exhausted(self) -> None:
        jobs = self._jobs
        with self.engine.begin() as conn:
            conn.execute(update(jobs).where(
                jobs.c.status == "running", jobs.c.attempts >= MAX_ATTEMPTS,
                jobs.c.lease_expires < epoch_now()).values(
                status="failed", updated_at=_now(),
                error=f"the workers running this job stopped {MAX_ATTEMPTS} times before it "
                      "finished; check the files and upload them again"))

    def expire_leases_of(self, owners: list[str]) -> int:
        """Make the running jobs of these (known dead) owners runnable at once."""
        if not owners:
            return 0
        jobs = self._jobs
        with self.engine.begin() as conn:
            return conn.execute(update(jobs).where(jobs.c.status == "running",
                                                   jobs.c.owner.in_(owners))
                                .values(lease_expires=0.0)).rowcount

    def running_owners(self) -> list[str]:
        jobs = self._jobs
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(select(jobs.c.owner).distinct().where(
                jobs.c.status == "running")).all() if r[0]]

    # the claim holder's updates -----------------------------------------------------------
    def _held(self, claim: Claim):
        jobs = self._jobs
        return and_(jobs.c.id == claim.job_id, jobs.c.owner == claim.owner,
                    jobs.c.attempts == claim.attempts, jobs.c.status == "running")

    def renew_lease(self, claim: Claim, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                    progress: Optional[dict] = None) -> bool:
        """Extend the lease (and store progress); False if the job is no longer ours."""
        values: dict[str, Any] = {"lease_expires": epoch_now() + lease_seconds,
                                  "updated_at": _now()}
        if progress is not None:
            values["progress"] = progress
        with self.engine.begin() as conn:
            return conn.execute(update(self._jobs).where(self._held(claim))
                                .values(**values)).rowcount == 1

    def finish_job(self, claim: Claim, status: str, *, report: Optional[dict] = None,
                   error: Optional[str] = None, progress: Optional[dict] = None) -> bool:
        if status not in ("done", "failed"):
            raise ValueError(f"a job finishes as done or failed, not {status!r}")
        values: dict[str, Any] = {"status": status, "report": report, "error": error,
                                  "lease_expires": None, "updated_at": _now()}
        if progress is not None:
            values["progress"] = progress
        with self.engine.begin() as conn:
            return conn.execute(update(self._jobs).where(self._held(claim))
                                .values(**values)).rowcount == 1

    @property
    def _jobs(self) -> Table:
        return metadata.tables["ingest_jobs"]


def _stamp(value: Optional[datetime]) -> Optional[str]:
    if value is None:
        return None
    return (value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value).isoformat()
