"""web_search behind a provider interface; Tavily over HTTP is the provider the seeds use.

Disabled by default (settings.web_search_enabled). Enabled without an API key, the tool
still exists and answers with an observation saying how to configure it, so a run never
crashes on configuration and the model can carry on with the document search.
"""

from __future__ import annotations

import os
from typing import Optional, Protocol

import httpx

from .base import Source, ToolResult
from .observation import format_sources, no_hits

TAVILY_URL = "https://api.tavily.com/search"
_NO_KEY = {
    "de": "Die Websuche ist aktiviert, aber kein Tavily-API-Schlüssel ist konfiguriert "
          "(Einstellung tavily_api_key oder Umgebungsvariable TAVILY_API_KEY).",
    "en": "Web search is enabled but no Tavily API key is configured "
          "(setting tavily_api_key or environment variable TAVILY_API_KEY).",
    "zh": "网络搜索已启用，但没有配置 Tavily API 密钥"
          "（设置 tavily_api_key 或环境变量 TAVILY_API_KEY）。",
}
_FAILED = {"de": "Die Websuche ist fehlgeschlagen: {err}",
           "en": "Web search failed: {err}", "zh": "网络搜索失败：{err}"}


class WebSearchProvider(Protocol):
    def search(self, query: str, max_results: int) -> list[Source]:
        ...


class TavilyProvider:
    """Tavily's search API (POST /search, bearer key); results become Sources with URLs."""

    def __init__(self, api_key: str, *, url: str = TAVILY_URL, timeout: float = 20.0,
                 client: Optional[httpx.Client] = None):
        self.api_key = api_key
        self.url = url
        self.client = client or httpx.Client(timeout=timeout)

    def search(self, query: str, max_results: int) -> list[Source]:
        response = self.client.post(
            self.url, headers={"Authorization": f"Bearer {self.api_key}"},
            json={"query": query, "max_results": max_results, "api_key": self.api_key})
        response.raise_for_status()
        results = response.json().get("results") or []
        return [Source(title=r.get("title") or r.get("url", ""), source=r.get("url", ""),
                       text=r.get("content") or "", url=r.get("url"),
                       score=float(r.get("score") or 0.0),
                       confidence=min(1.0, max(0.0, float(r.get("score") or 0.0))))
                for r in results[:max_results]]


class WebSearchTool:
    name = "web_search"
    parameter = "query"
    description = "Search the web (only if enabled for this bot)"
    description_de = "Websuche (nur wenn für diesen Bot aktiviert)"
    description_zh = "网络搜索（仅当为此机器人启用时）"

    def __init__(self, provider: Optional[WebSearchProvider], *, max_results: int = 5,
                 lang: str = "en"):
        self.provider = provider
        self.max_results = max_results
        self.lang = lang

    @property
    def ready(self) -> bool:
        return self.provider is not None

    def __call__(self, argument: str) -> ToolResult:
        lang = self.lang if self.lang in _NO_KEY else "en"
        if self.provider is None:
            return ToolResult(_NO_KEY[lang], error=True)
        try:
            sources = self.provider.search(argument.strip(), self.max_results)
        except (httpx.HTTPError, ValueError) as err:
            return ToolResult(_FAILED[lang].format(err=_describe(err)), error=True)
        if not sources:
            return ToolResult(no_hits(argument, lang))
        # Web relevance scores are not calibrated like the KB's: no adaptive exit on them.
        return ToolResult(format_sources(sources, range(1, len(sources) + 1), lang),
                          sources=sources, confidence=0.0)


def _describe(err: Exception) -> str:
    if isinstance(err, httpx.HTTPStatusError):
        return f"HTTP {err.response.status_code} from {err.request.url.host}"
    return str(err) or type(err).__name__


def web_search_tool(api_key: Optional[str], *, max_results: int = 5, lang: str = "en",
                    url: str = TAVILY_URL) -> WebSearchTool:
    key = api_key or os.environ.get("TAVILY_API_KEY")
    return WebSearchTool(TavilyProvider(key, url=url) if key else None,
                         max_results=max_results, lang=lang)
