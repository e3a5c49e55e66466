"""Server configuration: API keys, limits, allowed origins — from the environment by default.

Keys (bearer tokens): AGENTMODES_API_KEY grants the admin scope (everything: chatbots,
uploads, settings, users) and AGENTMODES_CHAT_API_KEY the chat scope (list chatbots, chat,
its own conversations), shared by everyone who holds it. Named users with keys of their
own are created by an admin (`agentmodes users add`, POST /api/users). With no key and no
user the server is open to its one local operator and therefore refuses to listen on
anything but loopback (cli/serve_command.py) and to answer any request that names another
site as its Origin or another host in its Host header (guard.py).

Limits (whole numbers; see the README's Security section):
  AGENTMODES_MAX_REQUEST_BYTES   JSON bodies and WebSocket frames (1 MiB)
  AGENTMODES_MAX_UPLOAD_BYTES    one upload request, all its files (25 MiB)
  AGENTMODES_RUN_WORKERS         agent runs going at once (8)
  AGENTMODES_RUN_QUEUE           runs waiting for one of those; beyond: 429 (64)
  AGENTMODES_RATE_CHAT           questions per API key, e.g. 60/minute (default); off
  AGENTMODES_RATE_UPLOAD         upload requests per API key (30/minute)
  AGENTMODES_WS_MAX              open WebSockets (256); AGENTMODES_WS_MAX_PENDING those not
                                 yet authenticated (32)
  AGENTMODES_WS_AUTH_TIMEOUT     seconds a new WebSocket has to authenticate (10)
  AGENTMODES_WS_IDLE_TIMEOUT     seconds an idle WebSocket stays open (300)
  AGENTMODES_ALLOWED_HOSTS       extra host names a keyless server answers to (comma list)
  AGENTMODES_CORS_ORIGINS        origins allowed to call the API from a browser (comma list)
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Optional

from ..errors import ConfigError
from .admission import Rate

MB = 1024 * 1024


def _int_env(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}")
    return value


def _list_env(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


@dataclass(slots=True)
class ServerConfig:
    admin_key: Optional[str] = field(default=None, repr=False)
    chat_key: Optional[str] = field(default=None, repr=False)
    max_request_bytes: int = 1 * MB          # JSON bodies: questions, settings
    max_upload_bytes: int = 25 * MB          # one upload request (all its files)
    cors_origins: list[str] = field(default_factory=list)   # empty: CORS off
    allowed_hosts: list[str] = field(default_factory=list)  # keyless: beyond loopback names
    run_workers: int = 8
    run_queue: int = 64
    rate_chat: Rate = Rate(60, 60.0)
    rate_upload: Rate = Rate(30, 60.0)
    ws_max: int = 256
    ws_max_pending: int = 32
    ws_auth_timeout_s: float = 10.0
    ws_idle_timeout_s: float = 300.0

    @classmethod
    def from_env(cls) -> "ServerConfig":
        env = os.environ.get
        defaults = cls()
        return cls(admin_key=env("AGENTMODES_API_KEY") or None,
                   chat_key=env("AGENTMODES_CHAT_API_KEY") or None,
                   max_request_bytes=_int_env("AGENTMODES_MAX_REQUEST_BYTES", 1 * MB, 1024),
                   max_upload_bytes=_int_env("AGENTMODES_MAX_UPLOAD_BYTES", 25 * MB, 1024),
                   cors_origins=_list_env("AGENTMODES_CORS_ORIGINS"),
                   allowed_hosts=_list_env("AGENTMODES_ALLOWED_HOSTS"),
                   run_workers=_int_env("AGENTMODES_RUN_WORKERS", defaults.run_workers),
                   run_queue=_int_env("AGENTMODES_RUN_QUEUE", defaults.run_queue, 0),
                   rate_chat=_rate_env("AGENTMODES_RATE_CHAT", defaults.rate_chat),
                   rate_upload=_rate_env("AGENTMODES_RATE_UPLOAD", defaults.rate_upload),
                   ws_max=_int_env("AGENTMODES_WS_MAX", defaults.ws_max),
                   ws_max_pending=_int_env("AGENTMODES_WS_MAX_PENDING", defaults.ws_max_pending),
                   ws_auth_timeout_s=_int_env("AGENTMODES_WS_AUTH_TIMEOUT", 10),
                   ws_idle_timeout_s=_int_env("AGENTMODES_WS_IDLE_TIMEOUT", 300))

    @property
    def auth_enabled(self) -> bool:
        """Keys from the environment; users in the database also turn auth on (auth.py)."""
        return bool(self.admin_key or self.chat_key)


def _rate_env(name: str, default: Rate) -> Rate:
    raw = os.environ.get(name)
    return default if raw is None else Rate.parse(raw, name)


def bare_host(host: str) -> str:
    """`[::1]` -> `::1`: the form sockets take (uvicorn fails on the bracketed one)."""
    host = host.strip()
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_host(host: str) -> str:
    """`::1` -> `[::1]`: the form a URL takes."""
    host = bare_host(host)
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    host = bare_host(host)
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
