"""API users: named keys an admin creates, each with a role (`chat` or `admin`).

A key is shown once, when it is made, and stored only as its SHA-256: a copy of the
database does not hand out working keys. (A plain hash is enough, unlike for passwords:
the keys are 256 random bits, so there is nothing to guess.) Users have ids that are never
reused, so a new user named like a deleted one never inherits its conversations.

`Principal` is who a request acts for: a user, one of the keys from the environment, or the
local operator of a server started without keys. Its `owner` string is what conversations
are filed under.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from sqlalchemy import Column, DateTime, Engine, Integer, String, Table, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import ConfigError
from .engine import metadata
from .errors import ConflictError, NotFoundError

ROLES = ("chat", "admin")
KEY_PREFIX = "am_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")

api_users = Table(
    "api_users", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("role", String(16), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    sqlite_autoincrement=True,          # ids are never handed out twice
)


class UserError(ConfigError):
    """A bad user name or role (a duplicate is a ConflictError, an unknown user NotFound)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for. Admins see every conversation; others only their own."""

    owner: str          # "user:<id>", "key:chat", "key:admin" or "local"
    name: str           # shown to people: the user's name, "chat", "admin" or "local"
    role: str           # "chat" | "admin"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


LOCAL = Principal("local", "local", "admin")         # keyless server on loopback
ENV_ADMIN = Principal("key:admin", "admin", "admin")  # AGENTMODES_API_KEY
ENV_CHAT = Principal("key:chat", "chat", "chat")      # AGENTMODES_CHAT_API_KEY (shared)


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    role: str
    created_at: Optional[str] = None

    @property
    def principal(self) -> Principal:
        return Principal(f"user:{self.id}", self.name, self.role)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def _user(row) -> User:
    created = row.created_at
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=timezone.utc)
    return User(row.id, row.name, row.role, created.isoformat() if created else None)


def _check(name: str, role: str) -> None:
    if not _NAME.match(name or ""):
        raise UserError("a user name is 1-100 letters, digits or . _ @ - and starts with a "
                        "letter or digit")
    if role not in ROLES:
        raise UserError(f"a user's role is one of {', '.join(ROLES)}, not {role!r}")


class UserStore:
    """Users and their key hashes in the application database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def create(self, name: str, role: str = "chat") -> tuple[User, str]:
        """A new user and its key (the only time the key is available)."""
        _check(name, role)
        key = new_key()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(api_users).values(
                    name=name, role=role, key_hash=key_hash(key),
                    created_at=datetime.now(timezone.utc)))
        except IntegrityError:
            raise ConflictError(f"a user named {name!r} already exists") from None
        return self.get(name), key

    def rotate_key(self, name: str) -> str:
        """A fresh key for the user; the old one stops working at once."""
        user = self.get(name)
        key = new_key()
        with self.engine.begin() as conn:
            conn.execute(update(api_users).where(api_users.c.id == user.id)
                         .values(key_hash=key_hash(key)))
        return key

    def get(self, name: str) -> User:
        with self.engine.connect() as conn:
            row = conn.execute(select(api_users).where(api_users.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"no user named {name!r}")
        return _user(row)

    def list(self) -> list[User]:
        with self.engine.connect() as conn:
            return [_user(r) for r in conn.execute(select(api_users).order_by(api_users.c.name))]

    def delete(self, name: str) -> None:
        user = self.get(name)
        with self.engine.begin() as conn:
            conn.execute(delete(api_users).where(api_users.c.id == user.id))

    def authenticate(self, key: str) -> Optional[User]:
        """The user holding `key`, or None. Looked up by hash: the key itself is never stored."""
        if not key.startswith(KEY_PREFIX):
            return None
        with self.engine.connect() as conn:
            row = conn.execute(select(api_users).where(
                api_users.c.key_hash == key_hash(key))).first()
        return _user(row) if row else None

    def any(self) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(api_users.c.id).limit(1)).first() is not None
