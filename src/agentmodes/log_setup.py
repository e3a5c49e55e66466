"""Where agentmodes' log lines go: Python `logging`, configured once per process.

Every module logs to its own logger under "agentmodes" (agentmodes.service for what the
seeds show as `[AgentChatService] ...`, agentmodes.modes.loop for the loop's decisions).
A library only adds records; a face decides where they go: `serve --log-level` (default
info) and, for every command, the AGENTMODES_LOG_LEVEL environment variable. Without either
a command stays quiet below warnings, so `ask`'s stdout and stderr stay readable.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Optional

from .errors import ConfigError

LEVELS = ("debug", "info", "warning", "error", "critical")
ENV = "AGENTMODES_LOG_LEVEL"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_HANDLER_NAME = "agentmodes"


def level_from(value: Optional[str], default: str = "warning") -> str:
    """A valid level name from an option or AGENTMODES_LOG_LEVEL; bad names are one-line
    errors that list the valid ones."""
    chosen = (value or os.environ.get(ENV) or default).strip().lower()
    if chosen not in LEVELS:
        source = "--log-level" if value else ENV
        raise ConfigError(f"{source}: unknown log level {chosen!r} (choose {', '.join(LEVELS)})")
    return chosen


def configure(value: Optional[str] = None, *, default: str = "warning") -> str:
    """Send the "agentmodes" loggers to stderr at the chosen level; returns the level name.
    Calling it again changes the level without adding a second handler."""
    level = level_from(value, default)
    logger = logging.getLogger("agentmodes")
    logger.setLevel(level.upper())
    if not any(h.get_name() == _HANDLER_NAME for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        logger.propagate = False
    return level
