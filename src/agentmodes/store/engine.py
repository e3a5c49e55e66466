"""One place that opens the application database (chatbots, conversations, Reflexion memory).

SQLite is the embedded default; any SQLAlchemy URL (e.g. postgresql+psycopg://...) works
behind the same face. For SQLite we turn on WAL (readers never block the writer, so two
server processes can share one file), a busy timeout (a second writer waits instead of
failing at once), and foreign keys (off by default in SQLite). A new SQLite file is created
owner-only (it holds conversations); a path that is a folder or another kind of file is
refused with one line before SQLAlchemy gets to it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, Table, create_engine, event, inspect, text

from ..errors import AgentModesError
from ..private_files import create_private_file, private_dir

metadata = MetaData()
SQLITE_HEADER = b"SQLite format 3\x00"


class DatabaseFileError(AgentModesError):
    """--db names something that is not (and cannot become) an SQLite database."""


def _prepare_sqlite_file(path: Path) -> None:
    if path.is_dir():
        raise DatabaseFileError(f"{path} is a directory, not a database file")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as err:
            raise DatabaseFileError(f"cannot read database {path}: {err.strerror}") from None
        if header and header != SQLITE_HEADER:
            raise DatabaseFileError(f"{path} is not an SQLite database")
        return
    try:
        private_dir(path.parent)
        create_private_file(path)
    except OSError as err:
        raise DatabaseFileError(f"cannot create database {path}: {err.strerror}") from None


def database_url(path_or_url: str | Path) -> str:
    text = str(path_or_url)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def make_engine(path_or_url: str | Path, *, busy_timeout_ms: int = 10_000) -> Engine:
    url = database_url(path_or_url)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        _prepare_sqlite_file(Path(url.removeprefix("sqlite:///")))
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


def add_missing_columns(engine: Engine, table: Table) -> None:
    """Add the nullable columns a newer version defined to an existing table (create_all
    never alters a table). Works the same on SQLite and PostgreSQL."""
    present = {c["name"] for c in inspect(engine).get_columns(table.name)}
    missing = [c for c in table.columns if c.name not in present]
    if not missing:
        return
    for column in missing:
        kind = column.type.compile(dialect=engine.dialect)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
        except Exception:
            # Another process added it first; anything else is a real error.
            if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                raise
