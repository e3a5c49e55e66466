"""Schema migrations of the application database, run by whoever opens it first.

Why Alembic rather than a hand-written version table: the application database lives on
SQLite and on PostgreSQL, and Alembic's operations compile each change for both (SQLite's
limited ALTER TABLE included, through batch mode); `compare_metadata` lets a test prove that
the migrations build exactly the tables the code declares (tests/test_migrations.py), so a
column added to a Table without a migration fails CI instead of a user's upgrade. The
revision files live in the package (store/migrations/versions/); no alembic.ini is needed,
but `alembic -c` with script_location pointing there works for developers too.

What we add around it:
- the whole upgrade runs in ONE transaction holding a lock (PostgreSQL: an advisory lock;
  SQLite: BEGIN IMMEDIATE), so N workers starting at once migrate once and a crash
  mid-upgrade leaves the previous schema (both engines have transactional DDL);
- a database already at head is recognised without taking the lock;
- a database from before migrations existed (tables made by create_all) is upgraded by the
  baseline revision, which creates only the tables that are missing;
- a database written by a newer agentmodes, or one that is a knowledge base rather than a
  chat database, is refused with one line.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from .engine import display_of, sqlite_pragmas
from .urls import DatabaseError

SCRIPTS = Path(__file__).with_name("migrations")
# pg_advisory_xact_lock key: "agentmodes chat schema" (any constant shared by all versions).
PG_LOCK_KEY = 0x61676D63
VERSION_TABLE = "alembic_version"


def _config(connection=None):
    from alembic.config import Config
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def head() -> str:
    from alembic.script import ScriptDirectory
    return ScriptDirectory.from_config(_config()).get_current_head()


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory
    return {s.revision for s in ScriptDirectory.from_config(_config()).walk_revisions()}


def current(connection) -> str | None:
    from alembic.migration import MigrationContext
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Bring the database to the newest schema (no-op when it is there already)."""
    where = display_of(engine)
    try:
        with engine.connect() as conn:
            _refuse_foreign(conn, where)
            if current(conn) == head():
                return
        locked = _locking_engine(engine)
        try:
            with locked.connect() as conn, conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
                revision = current(conn)
                if revision is not None and revision not in known_revisions():
                    raise DatabaseError(f"{where} was written by a newer agentmodes (schema "
                                        f"revision {revision}); upgrade agentmodes to use it")
                from alembic import command
                command.upgrade(_config(conn), "head")
        finally:
            if locked is not engine:
                locked.dispose()
    except DBAPIError as err:
        raise DatabaseError(f"cannot prepare the database {where}: "
                            f"{' '.join(str(err.orig).split())}") from None


def _locking_engine(engine: Engine) -> Engine:
    """PostgreSQL: the engine itself (the advisory lock does the work). SQLite: a one-off
    engine whose transactions start with BEGIN IMMEDIATE, i.e. take the write lock before
    the first read, so a second process waits (busy timeout) and then finds the work done.
    pysqlite would otherwise run DDL outside any transaction."""
    if engine.dialect.name != "sqlite":
        return engine
    locked = create_engine(engine.url, poolclass=NullPool)
    sqlite_pragmas(locked)

    @event.listens_for(locked, "connect")
    def _manual_transactions(dbapi_conn, _record):  # pragma: no cover - trivial
        dbapi_conn.isolation_level = None

    @event.listens_for(locked, "begin")
    def _immediate(conn):  # pragma: no cover - trivial
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    return locked


def _refuse_foreign(conn, where: str) -> None:
    """A knowledge base file or schema given as the chat database: say so, write nothing."""
    tables = set(inspect(conn).get_table_names())
    if "meta" in tables and "chunks" in tables and VERSION_TABLE not in tables:
        raise DatabaseError(f"{where} is an agentmodes knowledge base, not a chat database; "
                            "give --db a database of its own (the KB goes to --kb)")
