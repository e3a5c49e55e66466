"""MCP servers' tools inside the agent (official `mcp` SDK client), like any other tool.

A chatbot's settings name MCP servers (settings.McpServerSettings: a command for stdio or
a URL for streamable HTTP). Each server's tools become Tools named `<server>_<tool>` with
the server's own description, so they show in the prompt's tool list, in native tool
specs, and in the trace's action/observation events exactly as rag_search does.

The SDK is async and the loop calls tools synchronously, so each server gets one
connection on a background event loop (anyio's blocking portal), opened on first use and
kept for the process: starting a stdio server per question would cost a process spawn per
run. A failure (server down, tool error, timeout) is an observation the model can read,
never an exception in the loop.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import threading
from contextlib import ExitStack
from typing import Any, Iterable, Optional

from .base import Source, ToolResult

_CONNECTIONS: dict[str, "McpConnection"] = {}
_LOCK = threading.Lock()


class McpConnection:
    """One live client session to one MCP server, usable from synchronous code."""

    def __init__(self, config: Any) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client

        self.config = config
        self._stack = ExitStack()
        try:
            self.portal = self._stack.enter_context(start_blocking_portal())
            self.client = self._stack.enter_context(
                self.portal.wrap_async_context_manager(Client(_target(config))))
            self.tools = self.portal.call(self.client.list_tools).tools
        except BaseException:
            self._stack.close()
            raise

    def call(self, name: str, arguments: dict) -> Any:
        import anyio

        async def call() -> Any:
            with anyio.fail_after(self.config.timeout_s):
                return await self.client.call_tool(name, arguments)

        return self.portal.call(call)

    def close(self) -> None:
        self._stack.close()


def _target(config: Any) -> Any:
    """What mcp.Client connects to: a URL, a transport with headers, or a command."""
    if config.url and config.headers:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(config.url,
                                      http_client=httpx2.AsyncClient(headers=config.headers))
    if config.url:
        return config.url
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=config.command, args=list(config.args),
                                 env={**os.environ, **config.env} if config.env else None)


def connection(config: Any) -> McpConnection:
    """The process-wide connection for this server configuration (opened once)."""
    key = config.model_dump_json()
    with _LOCK:
        found = _CONNECTIONS.get(key)
        if found is None:
            found = _CONNECTIONS[key] = McpConnection(config)
        return found


@atexit.register
def close_all() -> None:
    with _LOCK:
        for conn in _CONNECTIONS.values():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        _CONNECTIONS.clear()


class McpTool:
    """One MCP tool as an agentmodes Tool (name, description, one string argument)."""

    def __init__(self, server: str, spec: Any, conn: McpConnection) -> None:
        self.remote = spec.name
        self.name = _tool_name(server, spec.name)
        self.description = " ".join((spec.description or spec.name).split())[:300] + \
            f" (MCP server {server})"
        self.description_de = self.description
        schema = spec.input_schema if hasattr(spec, "input_schema") else spec.inputSchema
        self.properties = dict((schema or {}).get("properties") or {})
        required = list((schema or {}).get("required") or [])
        strings = [k for k, v in self.properties.items() if v.get("type") == "string"]
        # One string parameter carries the argument; otherwise the argument is JSON.
        self.parameter = (required[0] if len(required) == 1 else
                          strings[0] if len(self.properties) == 1 and strings else "arguments")
        self.conn = conn

    def arguments(self, argument: str) -> dict:
        if self.parameter != "arguments":
            return {self.parameter: argument}
        try:
            decoded = json.loads(argument) if argument.strip() else {}
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise ValueError(f"{self.name} takes a JSON object with "
                             f"{', '.join(self.properties) or 'no'} keys")
        return decoded

    def __call__(self, argument: str) -> ToolResult:
        try:
            result = self.conn.call(self.remote, self.arguments(argument))
        except Exception as err:  # noqa: BLE001 - an observation, see the module docstring
            return ToolResult(f"The MCP tool {self.name} failed: {type(err).__name__}: "
                              f"{err}"[:500], error=True)
        text = _compact("\n".join(getattr(c, "text", "") or f"[{getattr(c, 'type', 'content')}]"
                                  for c in (result.content or [])))
        if result.is_error:
            return ToolResult(f"The MCP tool {self.name} reported an error: {text}"[:2000],
                              error=True)
        return ToolResult(text or "(no content)",
                          sources=[Source(title=f"{self.name}({argument[:60]})",
                                          source=f"mcp://{self.conn.config.name}/{self.remote}",
                                          text=text[:2000])] if text else [])


def _compact(text: str) -> str:
    """Indented JSON (what SDK servers send for structured results) on one line: the
    same content in far fewer prompt tokens."""
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            return json.dumps(json.loads(stripped), ensure_ascii=False)
        except ValueError:
            pass
    return text


def _tool_name(server: str, tool: str) -> str:
    """A name the step grammar and parser accept: letters, digits, underscores."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{server}_{tool}")[:64]


def mcp_tools(servers: Iterable[Any]) -> list[McpTool]:
    """The tools of every configured server; a server that cannot be reached becomes one
    tool that says so when called (the run goes on with the other tools)."""
    tools: list[Any] = []
    for config in servers:
        try:
            conn = connection(config)
        except Exception as err:  # noqa: BLE001
            tools.append(_Unreachable(config.name, f"{type(err).__name__}: {err}"))
            continue
        allowed: Optional[set] = set(config.tools) if config.tools is not None else None
        tools.extend(McpTool(config.name, spec, conn) for spec in conn.tools
                     if allowed is None or spec.name in allowed)
    return tools


class _Unreachable:
    parameter = "query"

    def __init__(self, server: str, reason: str) -> None:
        self.name = _tool_name(server, "unavailable")
        self.description = self.description_de = f"MCP server {server} (not reachable)"
        self.reason = reason[:300]

    def __call__(self, argument: str) -> ToolResult:
        return ToolResult(f"The MCP server could not be reached: {self.reason}", error=True)
