"""Secrets in chatbot settings: masked wherever settings are shown (the REST API, the web
page, logs), and kept when a client saves back the form it was shown.

A settings form is filled from what the API showed, so an unchanged secret comes back as
"***". Taken literally, saving the form would replace a real API key or an MCP server's
token with "***"; instead a masked value keeps the stored one.
"""

from __future__ import annotations

from typing import Any, Optional

from .errors import ConfigError

MASK = "***"
SECRET_SETTINGS = ("tavily_api_key",)
MCP_SECRET_FIELDS = ("headers", "env")          # an MCP server's tokens travel in these
_MCP_TARGET = ("url", "command")


def public_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings as shown to clients and written to logs: secrets are masked (also the
    headers and environment of MCP servers, which carry their tokens)."""
    shown = {k: (MASK if k in SECRET_SETTINGS and v else v) for k, v in settings.items()}
    if shown.get("mcp_servers"):
        shown["mcp_servers"] = [
            {**server, **{key: {name: MASK for name in server.get(key) or {}}
                          for key in MCP_SECRET_FIELDS}} for server in shown["mcp_servers"]]
    return shown


def keep_masked_secrets(current: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    """`incoming` settings with each masked value replaced by the stored one.

    A masked MCP header or env value is restored only for the same server (same name,
    url and command): were the url changed, the stored token would be sent to a host it
    was never meant for, so that save is refused with one line naming the value."""
    kept = {k: v for k, v in incoming.items() if not (k in SECRET_SETTINGS and v == MASK)}
    servers = kept.get("mcp_servers")
    if isinstance(servers, list):
        stored = {s.get("name"): s for s in current.get("mcp_servers") or []
                  if isinstance(s, dict)}
        kept["mcp_servers"] = [_restore_server(s, stored.get(s.get("name")))
                               if isinstance(s, dict) else s for s in servers]
    return kept


def _restore_server(server: dict[str, Any], stored: Optional[dict[str, Any]]) -> dict[str, Any]:
    same_target = stored is not None and all(server.get(k) == stored.get(k)
                                             for k in _MCP_TARGET)
    restored = dict(server)
    for field in MCP_SECRET_FIELDS:
        values = server.get(field)
        if not isinstance(values, dict) or MASK not in values.values():
            continue
        known = (stored or {}).get(field) or {} if same_target else {}
        for name, value in values.items():
            if value == MASK and name not in known:
                why = ("no such server is stored" if stored is None else
                       "its url or command changed" if not same_target else
                       "no value for it is stored")
                raise ConfigError(
                    f"invalid chatbot setting mcp_servers: {server.get('name')}.{field}."
                    f"{name} is masked ({MASK}) and {why}: send the real value")
        restored[field] = {name: known[name] if value == MASK else value
                           for name, value in values.items()}
    return restored
