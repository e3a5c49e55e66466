"""Cut an answer or a source passage into the statements the answer composer judges.

A statement is a sentence of prose, a list item, or a heading line ("Kontakt:"), with its
span in the original text, the paragraph (block) it belongs to and the [n] citations it
carries. Sentence boundaries come from sentencex (Wikimedia's rule-based segmenter: German
and English abbreviations, ~3 µs a sentence, native code, no dependencies); the structure
around it (blank-line paragraphs, Markdown list items and headings, a citation written
after the full stop, "geöffnet. [1]") is ours, because it decides which citation covers
which sentence.

Spans matter: a composed answer that keeps every statement of the model's answer must be
the model's text byte for byte, so the composer deletes spans rather than re-rendering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import sentencex

from .citations import CITATION_RE, SPACED_CITATION_RE, citations  # noqa: F401 - re-exported

Kind = Literal["sentence", "item", "heading"]
_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n+")
_ITEM_RE = re.compile(r"^[ \t]*(?:[-*•–]|\d{1,2}[.)])[ \t]+")
_ABBREVIATION_END = re.compile(r"\b(?:zzgl|inkl|ca|bzw|vgl|evtl|ggf|usw|etc|z\. ?B|d\. ?h|"
                               r"u\. ?a|Nr|Str|Tel|e\. ?g|i\. ?e|approx|incl|vs)\.$")
_HEADING_RE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+\S.*|[^.!?\n]{1,60}:)[ \t]*$")
_END_PUNCT_RE = re.compile(r"([.!?…:;]+)$")
_DANGLING_RE = re.compile(r"[\s\[(,]+$")


def recite(text: str, cites: tuple[int, ...]) -> str:
    """`text` citing `cites` instead of what it cited: the old [n] go with the space before
    them, and the new one goes where a writer puts it, before the closing punctuation
    ("geöffnet [2]." rather than "geöffnet . [2]"; "people [5]" rather than "people, [ [5]")."""
    # a sentence cut off by the token limit can end in an opened "[" or "(" or a comma
    bare = _DANGLING_RE.sub("", SPACED_CITATION_RE.sub("", text))
    mark = f" [{', '.join(map(str, cites))}]"
    end = _END_PUNCT_RE.search(bare)
    if end is None:
        return bare + mark
    return bare[:end.start()].rstrip() + mark + end.group(1)


@dataclass(slots=True)
class Statement:
    text: str                   # as written, citations included, outer white space stripped
    start: int                  # span in the original text
    end: int
    kind: Kind
    block: int                  # paragraph index: citations cover the statements of a block
    cites: tuple[int, ...]      # the [n] numbers written in this statement

    @property
    def plain(self) -> str:
        """The text without citation markers and list bullet."""
        return " ".join(_ITEM_RE.sub("", CITATION_RE.sub("", self.text)).split())


@lru_cache(maxsize=8192)
def _sentences(text: str, lang: str) -> tuple[str, ...]:
    return tuple(sentencex.segment(lang, text))


def split_statements(text: str, lang: str = "en") -> list[Statement]:
    """Statements of `text` in order; white space between them is not part of any."""
    out: list[Statement] = []
    pos, block = 0, 0
    for part in _BLOCK_SPLIT.split(text):
        start = text.find(part, pos) if part else pos
        pos = start + len(part)
        if part.strip():
            _block(text, start, part, block, lang, out)
            block += 1
    return out


def _block(text: str, offset: int, part: str, block: int, lang: str,
           out: list[Statement]) -> None:
    prose: list[tuple[int, str]] = []          # consecutive prose lines: (offset, line)
    line_start = offset
    for line in part.split("\n"):
        if _ITEM_RE.match(line) or (_HEADING_RE.match(line) and not CITATION_RE.search(line)):
            _prose(text, prose, block, lang, out)
            prose = []
            _add(out, text, line_start, line_start + len(line),
                 "item" if _ITEM_RE.match(line) else "heading", block)
        elif line.strip():
            prose.append((line_start, line))
        line_start += len(line) + 1
    _prose(text, prose, block, lang, out)


def _prose(text: str, lines: list[tuple[int, str]], block: int, lang: str,
           out: list[Statement]) -> None:
    """Sentences of a run of wrapped prose lines (offsets found back in the original)."""
    if not lines:
        return
    start, end = lines[0][0], lines[-1][0] + len(lines[-1][1])
    run = text[start:end]
    cursor = 0
    for sentence in _sentences(run, lang if lang in ("de", "en", "zh") else "en"):
        piece = sentence.strip()
        if not piece:
            continue
        at = run.find(piece, cursor)
        if at < 0:                               # the segmenter normalised something
            at = cursor
        cursor = at + len(piece)
        if out and out[-1].block == block and out[-1].kind == "sentence" and (
                CITATION_RE.fullmatch(piece) or _ABBREVIATION_END.search(out[-1].text)):
            # "[1]" alone belongs to the sentence before; so does the rest of a sentence
            # the segmenter cut after an abbreviation ("6.500 Euro zzgl." + "MwSt. [5]")
            _extend(out[-1], text, start + cursor)
            continue
        _add(out, text, start + at, start + cursor, "sentence", block)


def _add(out: list[Statement], text: str, start: int, end: int, kind: Kind, block: int) -> None:
    raw = text[start:end]
    lead = len(raw) - len(raw.lstrip())
    body = raw.strip()
    if body:
        out.append(Statement(body, start + lead, start + lead + len(body), kind, block,
                             citations(body)))


def _extend(statement: Statement, text: str, end: int) -> None:
    statement.end = end
    statement.text = text[statement.start:end].strip()
    statement.cites = citations(statement.text)


def block_citations(statements: list[Statement]) -> list[tuple[int, ...]]:
    """The citations that cover each statement: its own, else the next cited statement's
    in the same block (a citation at the end of a paragraph or list covers it), else the
    previous one's."""
    covered: list[tuple[int, ...]] = [s.cites for s in statements]
    for i, s in enumerate(statements):
        if covered[i]:
            continue
        after = next((t.cites for t in statements[i + 1:] if t.block == s.block and t.cites), ())
        before = next((t.cites for t in reversed(statements[:i])
                       if t.block == s.block and t.cites), ())
        covered[i] = after or before
    return covered
