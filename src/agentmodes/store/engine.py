"""One place that opens the application database (chatbots, conversations, Reflexion memory).

SQLite is the embedded default; any SQLAlchemy URL (e.g. postgresql+psycopg://...) works
behind the same face. For SQLite we turn on WAL (readers never block the writer, so two
server processes can share one file), a busy timeout (a second writer waits instead of
failing at once), and foreign keys (off by default in SQLite).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, create_engine, event

metadata = MetaData()


def database_url(path_or_url: str | Path) -> str:
    text = str(path_or_url)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def make_engine(path_or_url: str | Path, *, busy_timeout_ms: int = 10_000) -> Engine:
    url = database_url(path_or_url)
    engine = create_engine(url, future=True)
    if url.startswith("sqlite"):
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()
    return engine


def create_all(engine: Engine) -> None:
    """Create every table registered on `metadata` (import the table modules first)."""
    metadata.create_all(engine)
