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
    kb: Optional[str] = typer.Option(None, help="Serve a chatbot named `default` on this "
                                     "knowledge base file."),
    db: str = typer.Option("agentmodes-chat.db", help="Chat database (SQLite file or "
                           "SQLAlchemy URL): chatbots, conversations, traces."),
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

    level = configure(log_level, default="info")
    config = ServerConfig.from_env()
    keyed = config.auth_enabled or (not is_loopback(host) and has_users(db))
    if not keyed and not is_loopback(host):
        raise fail(f"refusing to listen on {host} without an API key; set AGENTMODES_API_KEY "
                   "(and optionally AGENTMODES_CHAT_API_KEY), create users with "
                   "`agentmodes users add`, or use --host 127.0.0.1")
    service = build_service(db, kb=kb, llm=llm or os.environ.get("AGENTMODES_LLM"))
    keyed = keyed or service.has_users()
    where = f"http://{url_host(host)}:{port}/"
    if keyed:
        typer.echo(f"agentmodes: serving {where} (API keys required; docs at {where}docs)",
                   err=True)
    else:
        typer.echo(f"agentmodes: serving {where} on loopback only: no API key is set, so "
                   f"only this server's own page may call it (docs at {where}docs)", err=True)
    try:
        uvicorn.run(create_app(service, config), host=bare_host(host), port=port,
                    access_log=access_log, log_level=level, timeout_graceful_shutdown=5,
                    ws_max_size=config.max_request_bytes)
    finally:
        service.close()
