"""`agentmodes serve --workers N`: N server processes on one port and one database.

uvicorn's supervisor binds the socket once and starts N worker processes that accept from
it (and restarts one that dies). A worker shares nothing with the others but the database:
each builds its own service from the environment below (`worker_app`, the factory uvicorn
imports in every worker), so workers started this way and `serve` processes started by hand
on other hosts are the same thing. What makes them interchangeable lives in the database:
chatbots, conversations and their messages, the ingest queue and the uploaded documents.

Environment of a worker (what `serve` sets for its workers, and what a container needs):
AGENTMODES_DB (chat database: path or postgresql:// URL), AGENTMODES_KB (optional: the
`default` chatbot's knowledge base), AGENTMODES_LLM, AGENTMODES_DATA_DIR (uploads being
ingested, SQLite KBs; the same path on every worker), plus the server's own settings
(AGENTMODES_API_KEY, ... see server/config.py).
"""

from __future__ import annotations

import os

from fastapi import FastAPI

WORKER_ENV = ("AGENTMODES_DB", "AGENTMODES_KB", "AGENTMODES_LLM", "AGENTMODES_DATA_DIR")


def worker_environment(db: str, kb: str | None, llm: str | None, data_dir: str) -> dict[str, str]:
    values = {"AGENTMODES_DB": db, "AGENTMODES_KB": kb or "", "AGENTMODES_LLM": llm or "",
              "AGENTMODES_DATA_DIR": data_dir}
    return {k: v for k, v in values.items() if v}


def worker_app() -> FastAPI:
    """The application of one worker process, built from its environment."""
    from ..log_setup import configure
    from . import ServerConfig, create_app
    from .runtime import build_service

    configure(default="info")           # AGENTMODES_LOG_LEVEL, as `serve --log-level` set it

    db = os.environ.get("AGENTMODES_DB") or "agentmodes-chat.db"
    service = build_service(db, kb=os.environ.get("AGENTMODES_KB") or None,
                            llm=os.environ.get("AGENTMODES_LLM") or None,
                            data_dir=os.environ.get("AGENTMODES_DATA_DIR") or None)
    app = create_app(service, ServerConfig.from_env())
    app.router.on_shutdown.append(service.close)
    return app
