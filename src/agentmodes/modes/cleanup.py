"""What a small model writes that is not an answer: prompt placeholders, labels, loops, junk.

The embedded 135M model copies its prompt ("[Complete answer with citations like [1]]"),
invents bracketed tags ("[DW/DG/DG] erwartet."), emits identifiers ("response_type_1") and
repeats a phrase until the token budget ends ("(während der Öffnungszeiten)" for 1,015
tokens). These functions remove that text from one statement, or say that the statement
is junk, before the composer asks whether the sources support what is left.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from ..knowledge.analysis import Analyzer

# A bracketed text that is not a citation list ([1], [1, 2]); it may contain citations
# itself, as the prompt's own placeholder does.
PLACEHOLDER_RE = re.compile(
    r"\[(?!\s*\d{1,3}(?:\s*,\s*\d{1,3})*\s*\])(?:[^\[\]\n]|\[\d{1,3}\]){0,200}\]"
    r"|\{[A-Z_]{2,}\}|<(?:answer|antwort|your answer|deine antwort)[^>]*>", re.I)
LABEL_RE = re.compile(
    r"^\s*(?:\**\s*(?:final answer|finale antwort|answer|antwort|response|reply|question|frage|"
    r"reflection|reflexion|thought|gedanke|action|aktion|observation|beobachtung|goal|ziel|"
    r"current state|aktueller zustand|last discovery|letzte entdeckung)"
    r"(?:\s*\d+)?\s*\**\s*:\s*)+", re.I)
_WORD_RE = re.compile(r"(?<!\w)[^\W\d_]{2,}(?!\w)")
_TOKEN_RE = re.compile(r"\S+")
MAX_PERIOD = 16                 # the longest repeated phrase looked for, in tokens


def strip_placeholders(text: str) -> str:
    return " ".join(PLACEHOLDER_RE.sub(" ", text).split())


def strip_labels(text: str) -> str:
    return LABEL_RE.sub("", text)


def collapse_repeats(text: str) -> str:
    """A phrase repeated back to back is kept once: "a b a b a b c" -> "a b c"."""
    tokens = _TOKEN_RE.findall(text)
    if len(tokens) < 4:
        return text
    out: list[str] = []
    i, changed = 0, False
    while i < len(tokens):
        for period in range(1, min(MAX_PERIOD, (len(tokens) - i) // 2) + 1):
            unit = tokens[i:i + period]
            j = i + period
            while tokens[j:j + period] == unit:
                j += period
            if j > i + period and (period > 1 or len(unit[0]) > 3):
                out.extend(unit)
                i, changed = j, True
                break
        else:
            out.append(tokens[i])
            i += 1
    return " ".join(out) if changed else text


def words(text: str) -> list[str]:
    """Real words: two or more letters, not part of an identifier like response_type_1."""
    return _WORD_RE.findall(text)


class PromptCopy:
    """Recognises text copied from the prompt: its word trigrams (as the KB analyses
    words) mostly occur in one of the prompt texts."""

    def __init__(self, analyzer: Analyzer, texts: Iterable[str] = ()):
        self.analyzer = analyzer
        self.grams: set[tuple[str, ...]] = set()
        for text in texts:
            self.grams |= self._grams(strip_placeholders(text) + " " + text)

    def _grams(self, text: str) -> set[tuple[str, ...]]:
        terms = self.analyzer.terms(text)
        return {tuple(terms[i:i + 3]) for i in range(len(terms) - 2)}

    def copied(self, text: str) -> bool:
        grams = self._grams(text)
        return bool(self.grams and grams) and len(grams & self.grams) / len(grams) >= 0.5


def junk_reason(text: str) -> Optional[str]:
    """Why a cleaned statement is not an answer sentence at all, or None."""
    if not words(text) and not re.search(r"(?<!\w)\d", text):
        return "junk"
    if re.fullmatch(r"\s*\([^()]*\)[\s.]*", text):
        return "fragment"                 # only a parenthesis, e.g. a repeated "(...)"
    return None
