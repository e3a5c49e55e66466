"""`agentmodes serve`: the chat server (REST, WebSocket, SSE, OpenAI-compatible API, web page)."""

from __future__ import annotations

import os
from typing import Optional

import typer

from .main import app, fail


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on. Anything but loopback "
                             "needs AGENTMODES_API_KEY."),
    port: int = typer.Option(8000, min=1, max=65535),
    kb: Optional[str] = typer.Option(None, envvar="AGENTMODES_KB", help="Serve a chatbot "
                                     "named `default` on this knowledge base (file or "
                                     "postgresql://...?kb=NAME)."),
    db: str = typer.Option("agentmodes-chat.db", envvar="AGENTMODES_DB", help="Chat database "
                           "(SQLite file or postgresql:// URL): chatbots, conversations, "
                           "traces, ingest jobs."),
    workers: int = typer.Option(1, min=1, max=64, envvar="AGENTMODES_WORKERS", help="Server "
                                "processes on this port; any of them answers any request."),
    data_dir: Optional[str] = typer.Option(None, envvar="AGENTMODES_DATA_DIR", help="Folder for "
                                           "uploads being ingested (default: next to the chat "
                                           "database); the same path on every worker."),
    llm: Optional[str] = typer.Option(None, help="Model: GGUF path, openai:MODEL, "
                                      "scripted:FILE.json; default AGENTMODES_LLM or the "
                                      "embedded model."),
    access_log: bool = typer.Option(True, help="Log each request line."),
    log_level: Optional[str] = typer.Option(None, "--log-level", help=(
        "debug | info | warning | error (default $AGENTMODES_LOG_LEVEL or info): the "
        "server's and agentmodes' log lines, e.g. [AgentChatService] mode routing")),
) -> None:
    """Serve chatbots over HTTP. Keys: AGENTMODES_API_KEY (admin), AGENTMODES_CHAT_API_KEY (chat)."""
    import uvicorn

    from ..server import ServerConfig, create_app
    from ..log_setup import configure
    from ..server.config import bare_host, is_loopback, url_host
    from ..server.runtime import build_service, has_users
    from ..store.urls import redact

    level = configure(log_level, default="info")
    config = ServerConfig.from_env()
    keyed = config.auth_enabled or (not is_loopback(host) and has_users(db))
    if not keyed and not is_loopback(host):
        raise fail(f"refusing to listen on {host} without an API key; set AGENTMODES_API_KEY "
                   "(and optionally AGENTMODES_CHAT_API_KEY), create users with "
                   "`agentmodes users add`, or use --host 127.0.0.1")
    llm = llm or os.environ.get("AGENTMODES_LLM")
    # Fails here, in one line, on a bad database, KB or model: before any worker starts.
    service = build_service(db, kb=kb, llm=llm, data_dir=data_dir, run_jobs=workers == 1)
    keyed = keyed or service.has_users()
    where = f"http://{url_host(host)}:{port}/"
    if keyed:
        typer.echo(f"agentmodes: serving {where} (API keys required; docs at {where}docs)",
                   err=True)
    else:
        typer.echo(f"agentmodes: serving {where} on loopback only: no API key is set, so "
                   f"only this server's own page may call it (docs at {where}docs)", err=True)
    options = dict(host=bare_host(host), port=port, access_log=access_log, log_level=level,
                   timeout_graceful_shutdown=5, ws_max_size=config.max_request_bytes)
    if workers > 1:
        from ..server.workers import worker_environment
        service.close()               # each worker builds its own (server/workers.py)
        os.environ.update(worker_environment(db, kb, llm, str(service.data_dir)),
                          AGENTMODES_LOG_LEVEL=level)
        typer.echo(f"agentmodes: {workers} workers on {redact(db)}", err=True)
        uvicorn.run("agentmodes.server.workers:worker_app", factory=True, workers=workers,
                    **options)
        return
    try:
        uvicorn.run(create_app(service, config), **options)
    finally:
        service.close()
