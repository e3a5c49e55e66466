"""`agentmodes mcp --kb FILE`: serve a knowledge base to MCP clients (Claude Desktop,
Cursor, VS Code, the MCP Inspector, any agent framework) over stdio or streamable HTTP."""

from __future__ import annotations

import os
from typing import Literal, Optional

import typer

from .ask_command import LLM_HELP, MODE_HELP, Mode
from .kb_commands import KB_HELP, kb_path
from .main import app, fail


@app.command("mcp")
def mcp_server(
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    transport: Literal["stdio", "http"] = typer.Option(
        "stdio", "--transport", help="stdio (a client starts this command) or http "
        "(streamable HTTP at /mcp)."),
    host: str = typer.Option("127.0.0.1", "--host", help="http: address to listen on."),
    port: int = typer.Option(8765, "--port", min=0, max=65535,
                             help="http: port (0 picks a free one; the URL is printed)."),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP + " Used by `ask`."),
    mode: Mode = typer.Option("reflact", "--mode", help=MODE_HELP + " `ask`'s default."),
) -> None:
    """Serve the knowledge base over MCP: tools `search` and `ask`, documents as resources.

    \b
    Examples:
      agentmodes mcp --kb kb.db                          # stdio, for a client to launch
      agentmodes mcp --kb kb.db --transport http --port 8765
    \b
    A client configuration (Claude Desktop, Cursor):
      {"mcpServers": {"docs": {"command": "agentmodes", "args": ["mcp", "--kb", "/abs/kb.db"]}}}
    """
    import anyio

    from ..knowledge.base import KnowledgeBase
    from ..mcp.server import KnowledgeService, build_server, serve_http
    from ..server.config import is_loopback
    from ..settings import ChatbotSettings

    if transport == "http" and not is_loopback(host):
        raise fail(f"refusing to serve MCP on {host}: it has no authentication; use "
                   "--host 127.0.0.1 (or a reverse proxy that adds it)")
    base = KnowledgeBase.open(kb_path(kb), create=False)
    try:
        service = KnowledgeService(base, llm or os.environ.get("AGENTMODES_LLM"),
                                   ChatbotSettings(agent_mode=mode))
        server = build_server(service)
        if transport == "stdio":
            server.run("stdio")          # stdout is the protocol: nothing else is printed
        else:
            anyio.run(serve_http, server, host, port,
                      lambda url: typer.echo(f"agentmodes: MCP server at {url}", err=True))
    finally:
        base.close()
