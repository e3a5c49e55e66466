"""Where data lives: a file path (SQLite) or a PostgreSQL URL, and opening the latter.

`--db`, `--kb`, AGENTMODES_DB and AGENTMODES_KB take either. A PostgreSQL location is a libpq
connection URI, passed to libpq unchanged (so every libpq form works: a unix-socket host as
`postgresql://user@/db?host=/run/postgresql`, `sslmode=`, `connect_timeout=`, a password in
the URI or in ~/.pgpass / PGPASSWORD), plus one parameter of our own that libpq never sees:
`kb=NAME`, the knowledge base inside that database (one database holds the chat store and
any number of knowledge bases).

Connection failures become one line that names the problem (unreachable, authentication,
no such database) and the location with its password masked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import AgentModesError, ConfigError

POSTGRES_SCHEMES = ("postgresql", "postgres")
KB_PARAMETER = "kb"
KB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$")
DEFAULT_CONNECT_TIMEOUT = 10     # seconds; libpq's default is to wait for ever
POSTGRES_EXTRA = "pip install 'agentmodes[postgres]'"


class DatabaseError(AgentModesError):
    """A database that cannot be reached, refuses us, or is not what the command needs."""


def scheme_of(location: str) -> str:
    head, sep, _ = str(location).partition("://")
    return head.lower().split("+", 1)[0] if sep and re.fullmatch(r"[A-Za-z][\w+.-]*", head) \
        else ""


def is_postgres(location: object) -> bool:
    """True for postgresql:// and postgres:// (also SQLAlchemy's postgresql+psycopg://)."""
    return scheme_of(str(location)) in POSTGRES_SCHEMES


def check_location(location: str, what: str) -> None:
    """Refuse URLs of databases we do not support, with the two forms we do."""
    scheme = scheme_of(location)
    if scheme and scheme not in POSTGRES_SCHEMES and scheme != "sqlite":
        raise ConfigError(f"{what} {redact(location)}: unsupported database {scheme!r}; give a "
                          "file path (SQLite) or a postgresql:// URL")


@dataclass(frozen=True, slots=True)
class PostgresURL:
    """A parsed PostgreSQL location: what libpq gets, and the KB name (if any)."""

    conninfo: str           # libpq URI without our own parameters
    kb: str | None          # ?kb=NAME
    display: str            # the URI as shown in messages: password masked

    @property
    def database(self) -> str:
        path = urlsplit(self.conninfo).path.lstrip("/")
        return unquote(path) or "(the user's default database)"

    def with_kb(self, name: str) -> "PostgresURL":
        return parse_postgres(_with_parameter(self.conninfo, KB_PARAMETER, name))


def parse_postgres(url: str) -> PostgresURL:
    text = str(url).strip()
    if not is_postgres(text):
        raise ConfigError(f"not a PostgreSQL URL: {redact(text)}")
    scheme, rest = text.split("://", 1)
    if "+" in scheme:               # SQLAlchemy's driver suffix: libpq does not know it
        text = "postgresql://" + rest
    base, _, query = text.partition("?")
    kept, kb = [], None
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if key == KB_PARAMETER:
            kb = unquote(value)
        else:
            kept.append(item)
    if kb is not None and not KB_NAME.fullmatch(kb):
        raise ConfigError(f"knowledge base name {kb!r} in {redact(text)} must be 1-60 letters, "
                          "digits, '.', '_' or '-', starting with a letter or digit")
    conninfo = base + ("?" + "&".join(kept) if kept else "")
    return PostgresURL(conninfo, kb, redact(conninfo if kb is None else text))


def kb_url(database: str, name: str) -> str:
    """The URL of knowledge base `name` inside the database at `database`."""
    if not is_postgres(database):
        raise ConfigError(f"a knowledge base inside the chat database needs a PostgreSQL "
                          f"chat database, not {redact(database)}")
    if not KB_NAME.fullmatch(name):
        raise ConfigError(f"knowledge base name {name!r} is not valid")
    return _with_parameter(parse_postgres(database).conninfo, KB_PARAMETER, name)


def _with_parameter(uri: str, key: str, value: str) -> str:
    base, _, query = uri.partition("?")
    items = [i for i in query.split("&") if i and i.partition("=")[0] != key]
    return base + "?" + "&".join([*items, f"{key}={value}"])


def redact(location: str) -> str:
    """The location with any password replaced by ***, safe for logs and error messages."""
    text = str(location)
    text = re.sub(r"(://[^:/?#@]*:)[^@/?#]*@", r"\1***@", text)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", text)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(f"PostgreSQL support needs psycopg: {POSTGRES_EXTRA}") from None
    return psycopg


def connect(url: PostgresURL, **kwargs: Any) -> Any:
    """A psycopg connection, or DatabaseError with one line saying why not."""
    psycopg = _psycopg()
    if "connect_timeout" not in url.conninfo:
        kwargs.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    try:
        return psycopg.connect(url.conninfo, **kwargs)
    except psycopg.Error as err:
        raise DatabaseError(connection_problem(err, url.display)) from None


def connection_problem(err: BaseException, display: str) -> str:
    """libpq's (multi-line) complaint as one line that starts with what went wrong."""
    detail = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
    detail = detail.removeprefix("connection is bad: ")       # psycopg's own preamble
    lowered = detail.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered \
            or ("role" in lowered and "does not exist" in lowered):
        kind = "PostgreSQL refused the credentials for"
    elif "database" in lowered and "does not exist" in lowered:
        kind = "no such PostgreSQL database:"
    elif "permission denied" in lowered:
        kind = "PostgreSQL denied access to"
    else:
        kind = "cannot reach PostgreSQL at"
    return f"{kind} {display} ({detail})"
