"""Sources numbered across a run, and answers whose citations match them.

Answers cite [n] where n is a source's number in the whole run (not in one search), so the
same chunk found by two searches keeps one number; a number that matches no source is
removed from the answer rather than shown as a dangling citation.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..tools.base import Source
from .citations import SPACED_CITATION_RE, citations



class SourceBook:
    """Run-level numbering of sources, deduplicated by chunk (or source and title)."""

    __slots__ = ("sources", "_index")

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self._index: dict[tuple, int] = {}

    def add(self, sources: Iterable[Source]) -> list[int]:
        numbers = []
        for src in sources:
            key = src.key()
            n = self._index.get(key)
            if n is None:
                self.sources.append(src)
                n = self._index[key] = len(self.sources)
            numbers.append(n)
        return numbers

    def __len__(self) -> int:
        return len(self.sources)

    def as_dicts(self, answer: str) -> list[dict]:
        cited = cited_numbers(answer)
        return [{**src.as_dict(), "index": i, "cited": i in cited}
                for i, src in enumerate(self.sources, 1)]


def cited_numbers(text: str) -> set[int]:
    return set(citations(text))


def clean_citations(text: str, count: int) -> str:
    """Drop citation numbers outside 1..count ([7] -> "", [1, 7] -> [1])."""
    if "[" not in text:
        return text

    def keep(m: re.Match) -> str:
        numbers = [n.strip() for n in m.group(1).split(",") if 1 <= int(n) <= count]
        if not numbers:
            return ""
        lead = m.group(0)[0] if m.group(0)[0] in " \t" else ""
        return f"{lead}[{', '.join(numbers)}]"

    return SPACED_CITATION_RE.sub(keep, text)


class CitationFilter:
    """clean_citations for a stream: an unclosed "[..." at a chunk's end waits for the next."""

    __slots__ = ("count", "pending")

    def __init__(self, count: int):
        self.count = count
        self.pending = ""

    def feed(self, text: str) -> str:
        text = self.pending + text
        self.pending = ""
        i = text.rfind("[")
        if i != -1 and "]" not in text[i:] and len(text) - i < 24:
            self.pending = text[i:]
            text = text[:i]
        return clean_citations(text, self.count)

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return clean_citations(text, self.count)
