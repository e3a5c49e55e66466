"""The agent's tools: search over a real knowledge base, respond, web search, the registry."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from agentmodes.errors import ConfigError
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.settings import ChatbotSettings
from agentmodes.tools.registry import build_tools
from agentmodes.tools.respond import RespondTool
from agentmodes.tools.search import lexical_search, rag_search
from agentmodes.tools.web import TavilyProvider, WebSearchTool

from kb_fixtures import HashingEmbedder

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = KnowledgeBase.open(tmp_path_factory.mktemp("kb") / "examples.db",
                              embedder=HashingEmbedder())
    base.ingest(EXAMPLES)
    yield base
    base.close()


@pytest.fixture(scope="module")
def text_only_kb(tmp_path_factory):
    base = KnowledgeBase.open(tmp_path_factory.mktemp("kb") / "text.db", embedder=HashingEmbedder())
    base.ingest(EXAMPLES, embed=False)
    yield base
    base.close()


def test_rag_search_finds_the_opening_hours_with_numbered_observation(kb):
    result = rag_search(kb, lang="de")("Öffnungszeiten")
    assert not result.error and result.sources
    first = result.text.splitlines()[0]
    assert first.startswith("[1] ") and "(Relevanz: " in first
    assert any("9-18" in s.text or "9 bis 18" in s.text for s in result.sources[:2])
    assert result.confidence == max(s.confidence for s in result.sources)
    assert all(s.chunk_id is not None and s.source.endswith((".md", ".html"))
               for s in result.sources)


def test_lexical_search_finds_the_email_in_the_imprint(kb):
    result = lexical_search(kb, lang="en")("office@dg-agentur.de Impressum")
    assert "(relevance: " in result.text
    assert any("impressum" in s.source for s in result.sources)


def test_rag_search_falls_back_to_lexical_when_nothing_is_embedded(text_only_kb):
    result = rag_search(text_only_kb)("Bahnhofstraße Nürnberg")
    assert not result.error and result.sources


def test_search_observations_are_trimmed():
    from agentmodes.knowledge.types import Hit

    class LongKB:
        def search(self, query, mode="hybrid", k=5):
            return [Hit(1, "Long", "long.md", "wort " * 500, 1.0, 0.5)]

    text = rag_search(LongKB())("wort").text
    assert len(text) < 500 and text.endswith("(relevance: 0.50)") and " ..." in text


def test_search_tool_bad_input_and_no_kb_are_observations():
    assert rag_search(None, lang="en")("Öffnungszeiten").error
    assert "No knowledge base" in rag_search(None, lang="en")("x").text
    assert rag_search(None)("  ").error


def test_no_hits_is_a_plain_observation(kb):
    result = lexical_search(kb)("Xylophonunterricht")
    assert result.sources == [] and "No results" in result.text and not result.error


def test_respond_ends_the_episode():
    result = RespondTool()("  Mo-Fr 9-18 Uhr [1] ")
    assert result.ends_episode and result.text == "Mo-Fr 9-18 Uhr [1]"


class _Tavily(BaseHTTPRequestHandler):
    status = 200
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.headers.get("Authorization"), body))
        payload = {"results": [{"title": "DG Agentur", "url": "https://dg-agentur.de/kontakt",
                                "content": "Digitalagentur in Nürnberg", "score": 0.91}]}
        data = json.dumps(payload if self.status == 200 else {"detail": "bad key"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def tavily():
    server = HTTPServer(("127.0.0.1", 0), _Tavily)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Tavily.status, _Tavily.seen = 200, []
    yield f"http://127.0.0.1:{server.server_port}/search"
    server.shutdown()
    server.server_close()


def test_web_search_over_http_returns_sources_with_urls(tavily):
    tool = WebSearchTool(TavilyProvider("tvly-test", url=tavily), max_results=3)
    result = tool("DG Agentur Nürnberg")
    assert not result.error
    assert result.sources[0].url == "https://dg-agentur.de/kontakt"
    assert "[1] DG Agentur: Digitalagentur in Nürnberg <https://dg-agentur.de/kontakt>" in result.text
    auth, body = _Tavily.seen[0]
    assert auth == "Bearer tvly-test" and body["query"] == "DG Agentur Nürnberg"
    assert body["max_results"] == 3
    assert result.confidence == 0.0             # web scores never trigger the adaptive exit


def test_web_search_http_error_is_an_observation(tavily):
    _Tavily.status = 401
    result = WebSearchTool(TavilyProvider("tvly-bad", url=tavily))("x")
    assert result.error and "HTTP 401" in result.text


def test_web_search_unreachable_is_an_observation():
    result = WebSearchTool(TavilyProvider("k", url="http://127.0.0.1:9/search", timeout=2))("x")
    assert result.error and result.text.startswith("Web search failed")


def test_registry_builds_the_enabled_tools_in_order(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    tools = build_tools(ChatbotSettings(), None)
    assert tools.names == ["rag_search", "lexical_search", "respond"]
    tools = build_tools(ChatbotSettings(tools_enabled=["lexical_search"], web_search_enabled=True,
                                        tavily_api_key="tvly-x"), None, lang="de")
    assert tools.names == ["lexical_search", "web_search"]
    assert tools.get("web_search").provider is not None
    assert tools.listing("de")[0] == ("lexical_search", "query", "Wörtliche Suche in den Dokumenten")
    assert [s.name for s in tools.specs()] == ["lexical_search", "web_search"]
    assert tools.search_tool().name == "web_search"   # no KB: the web is what can search
    assert build_tools(ChatbotSettings(), None).search_tool() is None
    assert build_tools(ChatbotSettings(), object()).search_tool().name == "rag_search"
    with pytest.raises(ConfigError, match="unknown tool 'python'"):
        build_tools(ChatbotSettings(tools_enabled=["python"]), None)
