"""Chatbots, conversations, messages (with their agent traces) and ingest jobs.

SQLAlchemy Core tables on the shared `metadata`, behind one small class (ChatStore), so the
service never writes SQL and PostgreSQL can follow by URL. Every write is its own short
transaction: no connection outlives a call, so the store is safe to use from the worker
threads that run agents, and two server processes can share one SQLite file (WAL + busy
timeout from store.engine).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import (JSON, Column, DateTime, Engine, Float, ForeignKey, Index, Integer, String,
                        Table, Text, delete, func, insert, select, update)
from sqlalchemy.exc import IntegrityError

from .engine import make_engine, metadata, prepare_schema
# Re-exported: callers import the errors from here.
from .errors import ChatStoreError, ConflictError, NotFoundError  # noqa: F401
from .job_queue import JobQueue, chatbot_documents
from .runs import RunningAnswers, this_process  # noqa: F401
from .users import UserStore

# "running": the answer's row is written when its run starts, so that a process killed
# mid-answer leaves a row that the next start marks as an error (fail_orphaned_runs).
MESSAGE_STATUSES = ("running", "complete", "cancelled", "error")
JOB_STATUSES = ("queued", "running", "done", "failed")

chatbots = Table(
    "chatbots", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("description", Text, nullable=False, default=""),
    Column("language", String(8), nullable=False, default="auto"),
    Column("kb_path", Text, nullable=True),
    Column("settings", JSON, nullable=False),          # ChatbotSettings.model_dump()
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

conversations = Table(
    "conversations", metadata,
    # Random ids: URLs do not reveal how many conversations exist, and two processes never
    # hand out the same id.
    Column("id", String(32), primary_key=True),
    Column("chatbot_id", Integer, ForeignKey("chatbots.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("title", Text, nullable=False, default=""),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # Principal.owner of its creator ("user:7", "key:chat", "local"); NULL for conversations
    # made by library code or before owners existed: those only admins see.
    Column("owner", String(100), nullable=True),
    Index("conversations_owner", "owner", "updated_at"),
)

messages = Table(
    "chatbot_messages", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("conversation_id", String(32), ForeignKey("conversations.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("role", String(16), nullable=False),               # user | assistant
    Column("content", Text, nullable=False, default=""),
    Column("status", String(16), nullable=False, default="complete"),
    Column("mode", String(16), nullable=True),
    Column("agent_trace", JSON, nullable=True),
    Column("stream_metadata", JSON, nullable=True),
    Column("usage", JSON, nullable=True),
    Column("sources", JSON, nullable=True),
    Column("timings", JSON, nullable=True),
    Column("error", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("worker", String(300), nullable=True),     # this_process() of a running answer
)

ingest_jobs = Table(
    "ingest_jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("chatbot_id", Integer, ForeignKey("chatbots.id", ondelete="CASCADE"), nullable=False),
    Column("status", String(16), nullable=False, default="queued"),
    Column("files", JSON, nullable=False),
    Column("progress", JSON, nullable=False),           # {"done": n, "total": m, "current": path}
    Column("report", JSON, nullable=True),
    Column("error", Text, nullable=True),
    # host:pid of the worker that created or claimed it (store/job_queue.py).
    Column("owner", String(300), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("lease_expires", Float, nullable=True),      # database clock, epoch seconds
    Column("attempts", Integer, nullable=False, default=0, server_default="0"),
    Index("ingest_jobs_runnable", "status", "created_at"),
)

def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(value: Optional[datetime]) -> Optional[str]:
    if value is None:
        return None
    if value.tzinfo is None:          # SQLite returns naive datetimes; we only store UTC
        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat()


@dataclass(slots=True)
class Chatbot:
    id: int
    name: str
    description: str
    language: str
    kb_path: Optional[str]
    settings: dict[str, Any]
    created_at: Optional[str] = None
    updated_at: Optional[str] = None


@dataclass(slots=True)
class Conversation:
    id: str
    chatbot_id: int
    chatbot: str
    title: str
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    message_count: int = 0
    owner: Optional[str] = None


@dataclass(slots=True)
class StoredMessage:
    id: int
    conversation_id: str
    role: str
    content: str
    status: str = "complete"
    mode: Optional[str] = None
    agent_trace: Optional[dict] = None
    stream_metadata: Optional[dict] = None
    usage: Optional[dict] = None
    sources: Optional[list] = None
    timings: Optional[dict] = None
    error: Optional[str] = None
    created_at: Optional[str] = None


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
    attempts: int = 0                  # claims by a worker so far (a dead worker's job is retried)


def _chatbot(row) -> Chatbot:
    return Chatbot(row.id, row.name, row.description, row.language, row.kb_path,
                   dict(row.settings or {}), _iso(row.created_at), _iso(row.updated_at))


def _message(row) -> StoredMessage:
    return StoredMessage(row.id, row.conversation_id, row.role, row.content, row.status,
                         row.mode, row.agent_trace, row.stream_metadata, row.usage, row.sources,
                         row.timings, row.error, _iso(row.created_at))


def _job(row) -> IngestJob:
    return IngestJob(row.id, row.chatbot_id, row.status, list(row.files or []),
                     dict(row.progress or {}), row.report, row.error,
                     _iso(row.created_at), _iso(row.updated_at), row.attempts or 0)


_MESSAGE_FIELDS = {"mode", "agent_trace", "stream_metadata", "usage", "sources", "timings",
                   "error", "worker"}


class ChatStore(JobQueue, RunningAnswers):
    """The persistence face of the chat service. Open with a file path or SQLAlchemy URL."""

    def __init__(self, engine: Engine, location: Optional[str] = None):
        self.engine = engine
        # Where it was opened (path or URL, password included): a chatbot's KB made inside
        # a PostgreSQL chat database is opened on the same connection string.
        self.location = location
        prepare_schema(engine)      # migrations: one process upgrades, the others wait
        self.users = UserStore(engine)

    @classmethod
    def open(cls, path_or_url: str) -> "ChatStore":
        return cls(make_engine(path_or_url), str(path_or_url))

    def close(self) -> None:
        self.engine.dispose()

    # chatbots ---------------------------------------------------------------------------
    def create_chatbot(self, name: str, settings: dict[str, Any], *, kb_path: Optional[str] = None,
                       language: str = "auto", description: str = "") -> Chatbot:
        now = _now()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(chatbots).values(
                    name=name, settings=settings, kb_path=kb_path, language=language,
                    description=description, created_at=now, updated_at=now))
        except IntegrityError:
            raise ConflictError(f"a chatbot named {name!r} already exists") from None
        return self.get_chatbot(name)

    def find_chatbot(self, name: str) -> Optional[Chatbot]:
        with self.engine.connect() as conn:
            row = conn.execute(select(chatbots).where(chatbots.c.name == name)).first()
        return _chatbot(row) if row else None

    def get_chatbot(self, name: str) -> Chatbot:
        bot = self.find_chatbot(name)
        if bot is None:
            raise NotFoundError(f"no chatbot named {name!r}")
        return bot

    def get_chatbot_by_id(self, chatbot_id: int) -> Chatbot:
        with self.engine.connect() as conn:
            row = conn.execute(select(chatbots).where(chatbots.c.id == chatbot_id)).first()
        if row is None:
            raise NotFoundError(f"no chatbot with id {chatbot_id}")
        return _chatbot(row)

    def list_chatbots(self) -> list[Chatbot]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(chatbots).order_by(chatbots.c.name)).all()
        return [_chatbot(r) for r in rows]

    def update_chatbot(self, name: str, **changes: Any) -> Chatbot:
        allowed = {"settings", "kb_path", "language", "description"}
        values = {k: v for k, v in changes.items() if k in allowed and v is not None}
        bot = self.get_chatbot(name)
        if values:
            with self.engine.begin() as conn:
                conn.execute(update(chatbots).where(chatbots.c.id == bot.id)
                             .values(**values, updated_at=_now()))
        return self.get_chatbot(name)

    def delete_chatbot(self, name: str) -> None:
        bot = self.get_chatbot(name)
        with self.engine.begin() as conn:
            # Explicit deletes: ON DELETE CASCADE needs foreign keys on, which not every
            # backend or existing file guarantees.
            conv_ids = select(conversations.c.id).where(conversations.c.chatbot_id == bot.id)
            conn.execute(delete(messages).where(messages.c.conversation_id.in_(conv_ids)))
            conn.execute(delete(conversations).where(conversations.c.chatbot_id == bot.id))
            conn.execute(delete(ingest_jobs).where(ingest_jobs.c.chatbot_id == bot.id))
            conn.execute(delete(chatbot_documents).where(chatbot_documents.c.chatbot_id == bot.id))
            conn.execute(delete(chatbots).where(chatbots.c.id == bot.id))

    # conversations ----------------------------------------------------------------------
    def create_conversation(self, chatbot: Chatbot, title: str = "", *,
                            owner: Optional[str] = None) -> Conversation:
        now = _now()
        conv_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            conn.execute(insert(conversations).values(
                id=conv_id, chatbot_id=chatbot.id, title=title[:200], created_at=now,
                updated_at=now, owner=owner))
        return Conversation(conv_id, chatbot.id, chatbot.name, title[:200], _iso(now), _iso(now),
                            owner=owner)

    def _conversation_query(self):
        count = (select(func.count(messages.c.id))
                 .where(messages.c.conversation_id == conversations.c.id).scalar_subquery())
        return (select(conversations, chatbots.c.name.label("chatbot"), count.label("n"))
                .join(chatbots, chatbots.c.id == conversations.c.chatbot_id))

    @staticmethod
    def _conversation(row) -> Conversation:
        return Conversation(row.id, row.chatbot_id, row.chatbot, row.title, _iso(row.created_at),
                            _iso(row.updated_at), row.n, row.owner)

    def get_conversation(self, conversation_id: str) -> Conversation:
        with self.engine.connect() as conn:
            row = conn.execute(self._conversation_query()
                               .where(conversations.c.id == conversation_id)).first()
        if row is None:
            raise NotFoundError(f"no conversation {conversation_id!r}")
        return self._conversation(row)

    def list_conversations(self, chatbot: Optional[Chatbot] = None, *, limit: int = 100,
                           offset: int = 0, owner: Optional[str] = None) -> list[Conversation]:
        """Newest first; `owner` keeps only that owner's conversations."""
        query = self._conversation_query()
        if chatbot is not None:
            query = query.where(conversations.c.chatbot_id == chatbot.id)
        if owner is not None:
            query = query.where(conversations.c.owner == owner)
        query = query.order_by(conversations.c.updated_at.desc()).limit(limit).offset(offset)
        with self.engine.connect() as conn:
            return [self._conversation(r) for r in conn.execute(query).all()]

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        self.get_conversation(conversation_id)
        with self.engine.begin() as conn:
            conn.execute(update(conversations).where(conversations.c.id == conversation_id)
                         .values(title=title[:200]))
        return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: str) -> None:
        self.get_conversation(conversation_id)
        with self.engine.begin() as conn:
            conn.execute(delete(messages).where(messages.c.conversation_id == conversation_id))
            conn.execute(delete(conversations).where(conversations.c.id == conversation_id))

    # messages ---------------------------------------------------------------------------
    def add_message(self, conversation_id: str, role: str, content: str, *,
                    status: str = "complete", **fields: Any) -> StoredMessage:
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"unknown message status {status!r}")
        now = _now()
        values = {k: v for k, v in fields.items() if k in _MESSAGE_FIELDS}
        with self.engine.begin() as conn:
            result = conn.execute(insert(messages).values(
                conversation_id=conversation_id, role=role, content=content, status=status,
                created_at=now, **values))
            conn.execute(update(conversations).where(conversations.c.id == conversation_id)
                         .values(updated_at=now))
            message_id = result.inserted_primary_key[0]
        values.pop("worker", None)
        return StoredMessage(message_id, conversation_id, role, content, status,
                             created_at=_iso(now), **values)

    def update_message(self, message_id: int, content: str, *, status: str,
                       **fields: Any) -> StoredMessage:
        """Finish the row a running answer was given when it started."""
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"unknown message status {status!r}")
        values = {k: v for k, v in fields.items() if k in _MESSAGE_FIELDS}
        with self.engine.begin() as conn:
            conn.execute(update(messages).where(messages.c.id == message_id)
                         .values(content=content, status=status, **values))
        return self.get_message(message_id)

    def list_messages(self, conversation_id: str, *, last: Optional[int] = None
                      ) -> list[StoredMessage]:
        """Messages in order; `last` keeps only the most recent ones (the history window)."""
        query = select(messages).where(messages.c.conversation_id == conversation_id)
        if last is not None:
            query = query.order_by(messages.c.id.desc()).limit(last)
        else:
            query = query.order_by(messages.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        result = [_message(r) for r in rows]
        return list(reversed(result)) if last is not None else result

    def get_message(self, message_id: int) -> StoredMessage:
        with self.engine.connect() as conn:
            row = conn.execute(select(messages).where(messages.c.id == message_id)).first()
        if row is None:
            raise NotFoundError(f"no message {message_id}")
        return _message(row)

    def count_messages(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count(messages.c.id))).scalar_one()

    # ingest jobs ------------------------------------------------------------------------
    def create_job(self, chatbot: Chatbot, files: list[str]) -> IngestJob:
        now = _now()
        job_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            conn.execute(insert(ingest_jobs).values(
                id=job_id, chatbot_id=chatbot.id, status="queued", files=files,
                owner=f"{socket.gethostname()}:{os.getpid()}",
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

    def list_jobs(self, chatbot: Chatbot) -> list[IngestJob]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(ingest_jobs).where(ingest_jobs.c.chatbot_id == chatbot.id)
                                .order_by(ingest_jobs.c.created_at.desc())).all()
        return [_job(r) for r in rows]
