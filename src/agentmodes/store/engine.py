"""One place that opens the application database (chatbots, conversations, jobs, memory).

SQLite is the embedded default; a postgresql:// URL (libpq form, see store/urls.py) opens
PostgreSQL through psycopg behind the same SQLAlchemy face. For SQLite we turn on WAL
(readers never block the writer, so several server processes can share one file), a busy
timeout (a second writer waits instead of failing at once), and foreign keys (off by
default in SQLite). For PostgreSQL the pool checks a connection before handing it out, so a
worker survives a database restart. A new SQLite file is created owner-only (it holds
conversations); a path that is a folder or another kind of file is refused with one line
before SQLAlchemy gets to it.
"""

from __future__ import annotations

import os
from pathlib import Path
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, MetaData, create_engine, event

from ..private_files import create_private_file, private_dir
from .urls import (DatabaseError, check_location, connect, is_postgres, parse_postgres, redact,
                   scheme_of)

metadata = MetaData()
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
_DISPLAY: "WeakKeyDictionary[Engine, str]" = WeakKeyDictionary()


def display_of(engine: Engine) -> str:
    """The location an engine was opened on, as shown in messages (password masked)."""
    return _DISPLAY.get(engine) or redact(str(engine.url))


def database_url(path_or_url: str | Path) -> str:
    """The SQLAlchemy URL of a SQLite location (a path or a sqlite:/// URL)."""
    text = str(path_or_url)
    if scheme_of(text) == "sqlite":
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def sqlite_pragmas(engine: Engine, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()


def make_engine(path_or_url: str | Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Engine:
    location = str(path_or_url)
    check_location(location, "database")
    if is_postgres(location):
        return postgres_engine(location)
    url = database_url(location)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        _prepare_sqlite_file(Path(url.removeprefix("sqlite:///")))
    engine = create_engine(url)
    sqlite_pragmas(engine, busy_timeout_ms)
    return engine


def _prepare_sqlite_file(path: Path) -> None:
    """Refuse a folder or a file of another kind; create a missing file owner-only (SQLite
    gives its -wal and -shm files the same mode)."""
    if path.is_dir():
        raise DatabaseError(f"{path} is a directory, not a database file")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as err:
            raise DatabaseError(f"cannot read database {path}: {err.strerror}") from None
        if header and header != SQLITE_HEADER:
            raise DatabaseError(f"{path} is not an SQLite database")
        return
    try:
        private_dir(path.parent)
        create_private_file(path)
    except OSError as err:
        raise DatabaseError(f"cannot create database {path}: {err.strerror}") from None


def postgres_engine(location: str) -> Engine:
    """SQLAlchemy over psycopg, connecting with our libpq URL handling (one-line errors).

    Pool size: each worker thread holds a connection only for one short statement or
    transaction, so a few per process serve many concurrent chats; AGENTMODES_DB_POOL_SIZE
    raises it (keep workers x (size + 10 overflow) below the server's max_connections).
    """
    url = parse_postgres(location)
    size = int(os.environ.get("AGENTMODES_DB_POOL_SIZE") or 5)
    engine = create_engine("postgresql+psycopg://", creator=lambda: connect(url),
                           pool_pre_ping=True, pool_size=size, max_overflow=10)
    _DISPLAY[engine] = url.display
    return engine


def prepare_schema(engine: Engine) -> None:
    """Create the tables on first use, upgrade them later (Alembic, store/migrate.py)."""
    from .migrate import upgrade
    upgrade(engine)
