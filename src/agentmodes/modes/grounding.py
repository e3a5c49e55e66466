"""Guards for answers a small model writes: endless repetition, and answers from nothing.

A 135M model asked for an answer tends to repeat one line until max_tokens, or to write
something unrelated to what the search found. Two cheap checks keep the answer useful
without touching good answers from capable models:
- RepetitionGuard stops the stream once the text repeats itself (saves the tokens too);
- grounded() says whether an answer cites a source or shares enough words with the
  sources; an ungrounded answer gets the findings appended, so the user still sees what the
  documents say.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from ..tools.base import Source
from ..tools.observation import snippet

_WORD_RE = re.compile(r"\w{4,}|\d+")
_CITE_RE = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
REPEATS = 3            # the same line (or tail) three times: the model is looping
MIN_OVERLAP = 0.3      # share of the answer's words found in the sources


class RepetitionGuard:
    """Fed the growing text; `looping` turns true when it starts repeating itself."""

    __slots__ = ("lines", "looping", "_done")

    def __init__(self) -> None:
        self.lines: Counter = Counter()
        self.looping = False
        self._done = 0                      # characters already split into complete lines

    def feed(self, text: str) -> bool:
        end = text.rfind("\n")
        if end > self._done:
            for line in text[self._done:end].split("\n"):
                key = " ".join(line.split())
                if len(key) >= 8:
                    self.lines[key] += 1
                    if self.lines[key] >= REPEATS:
                        self.looping = True
            self._done = end + 1
        tail = text[-40:]
        if not self.looping and len(text) >= 200 and len(tail) == 40 \
                and text.count(tail) >= REPEATS:
            self.looping = True
        return self.looping


def grounded(answer: str, sources: Sequence[Source]) -> bool:
    """True when the answer cites [n] or most of its words occur in the sources."""
    if not sources or _CITE_RE.search(answer):
        return True
    words = [w.lower() for w in _WORD_RE.findall(answer)]
    if not words:
        return True
    corpus = " ".join(f"{s.title} {s.text}" for s in sources).lower()
    found = sum(w in corpus for w in words)
    return found / len(words) >= MIN_OVERLAP


def findings(sources: Sequence[Source], limit: int = 5) -> str:
    """The first sources as cited bullet points: "- text ... [n]"."""
    return "\n".join(f"- {snippet(s.text.lstrip('-*• '), 200)} [{i}]"
                     for i, s in enumerate(sources[:limit], 1))
