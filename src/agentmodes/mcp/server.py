"""`agentmodes mcp --kb FILE`: the knowledge base as an MCP server (official `mcp` SDK).

Tools:
- `search(query, mode, k)`: hits with title, source, heading path, text and calibrated
  confidence; no LLM involved, so it is cheap enough for any client to call often.
- `ask(question, mode, task_type)`: a full agent run (the chosen reasoning mode over the
  KB) returning the cited answer, its sources and the run's cost.
Resources: every document as `agentmodes://documents/{id}` (Markdown: its passages in
reading order under their headings); documents ingested after start are readable by id.

The tools are plain functions run in a worker thread (anyio), so a long `ask` never
blocks the server's event loop; runs share one model, one at a time (llama.cpp runs one
generation per model anyway).
"""

from __future__ import annotations

import threading
from typing import Any, Literal, Optional

import anyio

from ..knowledge.chunking import HEADING_SEPARATOR

INSTRUCTIONS = ("Search this knowledge base with `search` (fast, no LLM) or let an agent "
                "answer from it with `ask` (cited answer). Documents are resources.")
DOC_URI = "agentmodes://documents/{doc_id}"


class KnowledgeService:
    """What the MCP tools call: a KB, an LLM loaded on first `ask`, default settings."""

    def __init__(self, kb: Any, llm_spec: Optional[str] = None,
                 settings: Optional[Any] = None) -> None:
        from ..settings import ChatbotSettings

        self.kb = kb
        self.llm_spec = llm_spec
        self.settings = settings or ChatbotSettings()
        self._llm = None
        self._lock = threading.Lock()        # one agent run at a time

    def search(self, query: str, mode: str = "hybrid", k: int = 5) -> dict:
        hits = self.kb.search(query, mode=mode, k=k)
        return {"query": query, "mode": mode, "hits": [
            {"rank": n, "title": h.title, "source": h.source,
             "heading_path": h.heading_path, "text": h.text,
             "confidence": round(h.confidence, 4), "chunk_id": h.chunk_id}
            for n, h in enumerate(hits, start=1)]}

    def ask(self, question: str, mode: Optional[str] = None,
            task_type: Optional[str] = None) -> dict:
        from ..agent import Agent
        from ..llm.registry import load_llm

        changes = {k: v for k, v in (("agent_mode", mode), ("task_type", task_type)) if v}
        settings = self.settings.model_copy(update=changes)
        with self._lock:
            if self._llm is None:
                self._llm = load_llm(self.llm_spec)
            result = Agent(llm=self._llm, knowledge=self.kb, settings=settings).run(question)
        cited = [s for s in result.done.get("sources", []) if s.get("cited")]
        return {"answer": result.answer, "mode": result.mode, "iterations": result.iterations,
                "adaptive_exit": result.adaptive_exit,
                "sources": [{k: s.get(k) for k in ("index", "title", "source", "text", "cited")}
                            for s in (cited or result.done.get("sources", []))],
                "usage": result.usage.as_dict()}

    def document_markdown(self, doc_id: int) -> str:
        info = self.kb.document(doc_id)
        if info is None:
            raise ValueError(f"no document {doc_id} in this knowledge base")
        parts = [f"# {info.title}", "", f"Source: {info.path}", ""]
        last: list[str] = []
        for passage in self.kb.passages(doc_id):
            if passage.heading_path and passage.heading_path != last:
                parts += [f"## {HEADING_SEPARATOR.join(passage.heading_path)}", ""]
                last = passage.heading_path
            parts += [passage.text, ""]
        return "\n".join(parts)


def build_server(service: KnowledgeService, name: str = "agentmodes") -> Any:
    """The MCPServer with the tools and resources above."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import Resource as MCPResource

    from .. import __version__

    server = MCPServer(name=name, version=__version__, instructions=INSTRUCTIONS)

    @server.tool(name="search", description=(
        "Search the knowledge base (lexical BM25, semantic embeddings, or both fused). "
        "Every hit has a calibrated confidence from 0 to 1."))
    async def search(query: str, mode: Literal["lexical", "semantic", "hybrid"] = "hybrid",
                     k: int = 5) -> dict:
        if not query.strip():
            raise ToolError("empty query: give some words to search for")
        return await _run(ToolError, service.search, query, mode, max(1, min(k, 50)))

    @server.tool(name="ask", description=(
        "Answer a question with an LLM agent over the knowledge base; returns the answer "
        "with numbered citations [n] and the sources they point at."))
    async def ask(question: str,
                  mode: Optional[Literal["act", "react", "reflact"]] = None,
                  task_type: Optional[Literal["lookup", "multihop"]] = None) -> dict:
        if not question.strip():
            raise ToolError("the question is empty")
        return await _run(ToolError, service.ask, question, mode, task_type)

    async def list_documents() -> list:
        # Read from the KB at every listing, not once at start: documents ingested (or
        # removed) by another process while this server runs are listed as they are now.
        # Reading one goes through the template below, whatever the list said.
        infos = await anyio.to_thread.run_sync(service.kb.documents)
        return [MCPResource(uri=DOC_URI.format(doc_id=info.id), name=info.name,
                            title=info.title, mime_type="text/markdown",
                            description=f"{info.title} ({info.chunks} passages) from {info.path}")
                for info in infos]

    server.list_resources = list_documents
    @server.resource(DOC_URI, name="document", mime_type="text/markdown",
                     description="A document of the knowledge base by id.")
    def document(doc_id: str) -> str:
        if not doc_id.isdigit():
            raise ValueError(f"document ids are numbers, not {doc_id!r}")
        return service.document_markdown(int(doc_id))

    return server


async def _run(error: type, fn: Any, *args: Any) -> Any:
    """fn in a worker thread; a user-facing error (AgentModesError) becomes the tool's
    error message for the client, not a server traceback."""
    from ..errors import AgentModesError

    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except AgentModesError as err:
        raise error(str(err)) from None


async def serve_http(server: Any, host: str, port: int, announce) -> None:
    """Streamable HTTP at /mcp on a socket bound first, so port 0 works and the chosen
    port can be announced before the first request."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    actual = sock.getsockname()[1]
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    announce(f"http://{host}:{actual}/mcp")
    await uvicorn.Server(config).serve(sockets=[sock])
