"""Reflexion's long-term memory, persisted (seed 004, "记忆分两层").

A Reflexion run keeps the verbal lessons of failed trials. The seed keeps only the last
k = 3 of them so the actor's prompt does not grow without bound; we persist them per task
key so that the next run of the same task (in another process, after a restart) starts with
what was already learned. One row per reflection; `append` trims the task's rows to the
newest `keep` in the same transaction, so concurrent writers never leave more than that.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import (Column, DateTime, Engine, Integer, String, Table, Text, delete,
                        func, insert, select)

from ..errors import AgentModesError
from .engine import make_engine, metadata, prepare_schema
from .urls import redact

DEFAULT_K = 3

reflexion_memory = Table(
    "reflexion_memory", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task_key", String(255), nullable=False, index=True),
    Column("reflection", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False,
           default=lambda: datetime.now(timezone.utc)),
)


class ReflexionMemoryStore:
    """Last-k reflections per task key in the application database (SQLite file or URL)."""

    def __init__(self, path_or_url: str | Path | Engine, *, keep: int = DEFAULT_K):
        if keep < 1:
            raise AgentModesError(f"reflexion memory must keep at least 1 reflection, got {keep}")
        self.keep = keep
        try:
            self.engine = path_or_url if isinstance(path_or_url, Engine) \
                else make_engine(path_or_url)
            prepare_schema(self.engine)
        except AgentModesError as err:      # already names the location
            raise AgentModesError(f"cannot open the memory store: {err}") from None
        except Exception as err:  # sqlite3.OperationalError etc.: unusable path
            raise AgentModesError(f"cannot open the memory store {redact(str(path_or_url))}: "
                                  f"{err}") from err

    def load(self, task_key: str, k: int = DEFAULT_K) -> list[str]:
        """The newest k reflections for the task, oldest first (prompt order)."""
        stmt = (select(reflexion_memory.c.reflection)
                .where(reflexion_memory.c.task_key == task_key)
                .order_by(reflexion_memory.c.id.desc()).limit(max(0, k)))
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).scalars().all()
        return list(reversed(rows))

    def append(self, task_key: str, reflection: str) -> None:
        """Store one reflection and forget all but the newest `keep` of the task."""
        text = reflection.strip()
        if not text:
            return
        with self.engine.begin() as conn:
            conn.execute(insert(reflexion_memory).values(task_key=task_key, reflection=text))
            newest = (select(reflexion_memory.c.id)
                      .where(reflexion_memory.c.task_key == task_key)
                      .order_by(reflexion_memory.c.id.desc()).limit(self.keep))
            conn.execute(delete(reflexion_memory).where(
                reflexion_memory.c.task_key == task_key,
                reflexion_memory.c.id.not_in(newest.scalar_subquery())))

    def count(self, task_key: str) -> int:
        stmt = select(func.count()).select_from(reflexion_memory).where(
            reflexion_memory.c.task_key == task_key)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def clear(self, task_key: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(reflexion_memory).where(reflexion_memory.c.task_key == task_key))

    def close(self) -> None:
        self.engine.dispose()


class InProcessMemory:
    """The same face without a database: long-term memory that lives as long as the object
    (for one-off runs where nothing should be written to disk)."""

    def __init__(self, *, keep: int = DEFAULT_K):
        self.keep = keep
        self._items: dict[str, list[str]] = {}

    def load(self, task_key: str, k: int = DEFAULT_K) -> list[str]:
        items = self._items.get(task_key, [])
        return list(items[-k:]) if k > 0 else []

    def append(self, task_key: str, reflection: str) -> None:
        text = reflection.strip()
        if text:
            items = self._items.setdefault(task_key, [])
            items.append(text)
            del items[:-self.keep]

    def count(self, task_key: str) -> int:
        return len(self._items.get(task_key, []))

    def clear(self, task_key: str) -> None:
        self._items.pop(task_key, None)

    def close(self) -> None:
        pass
