"""The numbered observation text the seeds show the model: `[1] Title: text (Relevanz: 0.87)`.

One formatter for every source-returning tool, so the loop can renumber a tool's sources
into the run's numbering (answers cite [n] across all searches of a run) and re-render.
"""

from __future__ import annotations

from typing import Sequence

from .base import Source

SNIPPET_CHARS = 400
_RELEVANCE = {"de": "Relevanz", "en": "relevance", "zh": "相关度"}
_NO_HITS = {"de": "Keine Treffer für {q!r}.", "en": "No results for {q!r}.",
            "zh": "没有找到 {q!r} 的结果。"}


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """Whitespace collapsed, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > limit // 2 else limit] + " ..."


def format_sources(sources: Sequence[Source], numbers: Sequence[int], lang: str = "en") -> str:
    label = _RELEVANCE.get(lang, "relevance")
    lines = []
    for n, src in zip(numbers, sources):
        where = f" <{src.url}>" if src.url else ""
        lines.append(f"[{n}] {src.title}: {snippet(src.text)}{where} ({label}: {src.confidence:.2f})")
    return "\n".join(lines)


def no_hits(query: str, lang: str = "en") -> str:
    return _NO_HITS.get(lang, _NO_HITS["en"]).format(q=query)
