"""rag_search and lexical_search: the agent's two ways into the knowledge base.

rag_search asks for hybrid search (semantic + lexical fused); a KB that cannot search
semantically (no vectors yet, embedder unavailable) still answers lexically, because a
folder is searchable by keywords as soon as its text is stored (issue 2).
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Union

from ..errors import AgentModesError
from .base import Source, ToolResult
from .observation import format_sources, no_hits

_NO_KB = {"de": "Keine Wissensbasis geöffnet: es gibt keine Dokumente zu durchsuchen.",
          "en": "No knowledge base is open: there are no documents to search.",
          "zh": "没有打开知识库：没有可搜索的文档。"}
_EMPTY = {"de": "Leere Suchanfrage: gib Suchbegriffe an, z. B. rag_search(\"Öffnungszeiten\").",
          "en": "Empty search query: give search terms, e.g. rag_search(\"opening hours\").",
          "zh": "搜索词为空：请给出搜索词，例如 rag_search(\"营业时间\")。"}


def hit_to_source(hit: Any) -> Source:
    title = hit.title or hit.source
    path = [h for h in (getattr(hit, "heading_path", None) or []) if h and h != title]
    if path:
        title = f"{title} - {path[-1]}"
    return Source(title=title, source=hit.source, text=hit.text, chunk_id=hit.chunk_id,
                  score=float(hit.score), confidence=float(hit.confidence))


class SearchTool:
    """A knowledge-base search exposed as a tool; `search_mode` is the KB's search mode."""

    parameter = "query"

    def __init__(self, name: str, kb: Optional[Any], search_mode: str, *, k: int = 5,
                 description: str, description_de: str, description_zh: str = "",
                 lang: str = "en"):
        self.name = name
        self.kb = kb
        self.search_mode = search_mode
        self.k = k
        self.description = description
        self.description_de = description_de
        self.description_zh = description_zh
        self.lang = lang

    @property
    def ready(self) -> bool:
        return self.kb is not None

    def __call__(self, argument: str) -> ToolResult:
        result: Optional[ToolResult] = None
        for piece in self.stream(argument):
            if isinstance(piece, ToolResult):
                result = piece
        assert result is not None
        return result

    def stream(self, argument: str) -> Iterator[Union[Source, ToolResult]]:
        """The hits one by one (the loop shows each as it arrives), then the ToolResult."""
        query = argument.strip()
        if not query:
            yield ToolResult(_EMPTY.get(self.lang, _EMPTY["en"]), error=True)
            return
        if self.kb is None:
            yield ToolResult(_NO_KB.get(self.lang, _NO_KB["en"]), error=True)
            return
        try:
            hits = self.kb.search(query, mode=self.search_mode, k=self.k)
        except AgentModesError:
            if self.search_mode == "lexical":
                raise
            hits = self.kb.search(query, mode="lexical", k=self.k)
        if not hits:
            yield ToolResult(no_hits(query, self.lang), effect=False)
            return
        sources = []
        for hit in hits:
            source = hit_to_source(hit)
            sources.append(source)
            yield source
        text = format_sources(sources, range(1, len(sources) + 1), self.lang)
        yield ToolResult(text, sources=sources, confidence=max(s.confidence for s in sources))

def rag_search(kb: Optional[Any], *, k: int = 5, lang: str = "en") -> SearchTool:
    return SearchTool("rag_search", kb, "hybrid", k=k, lang=lang,
                      description="Semantic search in the documents",
                      description_de="Semantische Suche in den Dokumenten",
                      description_zh="在文档中进行语义搜索")


def lexical_search(kb: Optional[Any], *, k: int = 5, lang: str = "en") -> SearchTool:
    return SearchTool("lexical_search", kb, "lexical", k=k, lang=lang,
                      description="Literal keyword search in the documents",
                      description_de="Wörtliche Suche in den Dokumenten",
                      description_zh="在文档中进行字面（关键词）搜索")
