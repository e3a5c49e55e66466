"""Build the tool set a chatbot may use from its settings (tools_enabled, web search)."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ..errors import ConfigError
from ..llm.base import ToolSpec
from .base import Tool
from .respond import RespondTool
from .search import lexical_search, rag_search
from .web import web_search_tool

BUILTIN = ("rag_search", "lexical_search", "respond", "web_search")


class ToolSet:
    """The enabled tools by name, in the order the prompt lists them."""

    def __init__(self, tools: Iterable[Tool]):
        self.by_name: dict[str, Tool] = {t.name: t for t in tools}

    @property
    def names(self) -> list[str]:
        return list(self.by_name)

    def get(self, name: str) -> Optional[Tool]:
        return self.by_name.get(name)

    def search_tool(self) -> Optional[Tool]:
        """The search the loop runs itself (unreadable steps, answers before any search):
        only one that can search (a KB is open, a web provider is configured)."""
        for name in ("rag_search", "lexical_search", "web_search"):
            tool = self.by_name.get(name)
            if tool is not None and getattr(tool, "ready", True):
                return tool
        return None

    def listing(self, lang: str, *, include_respond: bool = True) -> list[tuple[str, str, str]]:
        """(name, parameter, description) for the prompt's tool block."""
        return [(t.name, getattr(t, "parameter", "query"),
                 getattr(t, f"description_{lang}", None) or t.description)
                for t in self.by_name.values() if include_respond or t.name != "respond"]

    def specs(self) -> list[ToolSpec]:
        """Native tool-calling schemas (OpenAI function format)."""
        out = []
        for t in self.by_name.values():
            param = getattr(t, "parameter", "query")
            out.append(ToolSpec(t.name, t.description, {
                "type": "object", "properties": {param: {"type": "string"}},
                "required": [param]}))
        return out


def build_tools(settings: Any, kb: Optional[Any], *, lang: str = "en",
                extra: Optional[Iterable[Tool]] = None) -> ToolSet:
    """Tools named in settings.tools_enabled (+ web_search when enabled) and `extra` tools.

    `extra` tools (e.g. a code sandbox) are always enabled and replace built-ins by name.
    """
    extra_by_name = {t.name: t for t in (extra or [])}
    # web_search only when the bot enables it (seed 002), even if tools_enabled names it.
    names = [n for n in dict.fromkeys(settings.tools_enabled)
             if n != "web_search" or settings.web_search_enabled]
    if settings.web_search_enabled and "web_search" not in names:
        names.append("web_search")
    unknown = [n for n in names if n not in BUILTIN and n not in extra_by_name]
    if unknown:
        raise ConfigError(f"unknown tool {unknown[0]!r} in tools_enabled "
                          f"(known: {', '.join(BUILTIN)})")
    k = getattr(settings, "search_k", 5)
    tools: list[Tool] = []
    for name in names:
        if name in extra_by_name:
            tools.append(extra_by_name.pop(name))
        elif name == "rag_search":
            tools.append(rag_search(kb, k=k, lang=lang))
        elif name == "lexical_search":
            tools.append(lexical_search(kb, k=k, lang=lang))
        elif name == "respond":
            tools.append(RespondTool())
        elif name == "web_search":
            tools.append(web_search_tool(settings.tavily_api_key,
                                         max_results=settings.web_search_max_results, lang=lang))
    tools.extend(extra_by_name.values())
    if getattr(settings, "mcp_servers", None):      # MCP servers' tools (tools/mcp_tools.py)
        from .mcp_tools import mcp_tools
        taken = {t.name for t in tools}
        tools.extend(t for t in mcp_tools(settings.mcp_servers) if t.name not in taken)
    return ToolSet(tools)
