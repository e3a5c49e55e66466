"""Server configuration: API keys, size limits, CORS — from the environment by default.

Keys (bearer tokens): AGENTMODES_API_KEY grants the admin scope (everything: chatbots,
uploads, settings) and AGENTMODES_CHAT_API_KEY the chat scope only (list chatbots, chat,
read conversations). With no key set the server is open and therefore refuses to listen on
anything but loopback (see cli/serve_command.py).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Optional

from ..errors import ConfigError

MB = 1024 * 1024


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}") from None


@dataclass(slots=True)
class ServerConfig:
    admin_key: Optional[str] = field(default=None, repr=False)
    chat_key: Optional[str] = field(default=None, repr=False)
    max_request_bytes: int = 1 * MB          # JSON bodies: questions, settings
    max_upload_bytes: int = 25 * MB          # one upload request (all its files)
    cors_origins: list[str] = field(default_factory=list)   # empty: CORS off

    @classmethod
    def from_env(cls) -> "ServerConfig":
        origins = [o.strip() for o in os.environ.get("AGENTMODES_CORS_ORIGINS", "").split(",")
                   if o.strip()]
        return cls(admin_key=os.environ.get("AGENTMODES_API_KEY") or None,
                   chat_key=os.environ.get("AGENTMODES_CHAT_API_KEY") or None,
                   max_request_bytes=_int_env("AGENTMODES_MAX_REQUEST_BYTES", 1 * MB),
                   max_upload_bytes=_int_env("AGENTMODES_MAX_UPLOAD_BYTES", 25 * MB),
                   cors_origins=origins)

    @property
    def auth_enabled(self) -> bool:
        return bool(self.admin_key or self.chat_key)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
