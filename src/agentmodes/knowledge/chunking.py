"""Cut extracted blocks into chunks that follow the document's structure.

Sizes are in characters (not tokens): characters need no tokenizer, are stable across
embedders, and about 4 characters make one token for the English and German text we target,
so the default 1,200 characters stay well inside the 512-token window of e5-small.

Rules, in order of strength:
1. A chunk never spans two sections (a change of heading path starts a new chunk), so every
   chunk has one true heading path.
2. Inside a section, whole paragraphs are packed until the size is reached.
3. A paragraph longer than the size is cut at sentence ends (then at spaces).
4. Consecutive chunks of the same section share `overlap` characters of context, taken
   from the end of the previous chunk at a sentence or word boundary.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from .extract import Block

DEFAULT_CHUNK_SIZE = 1200
DEFAULT_CHUNK_OVERLAP = 150
HEADING_SEPARATOR = " › "


@dataclass(slots=True)
class Chunk:
    position: int            # 0-based order inside its document
    title: str               # the document's title
    heading_path: list[str] = field(default_factory=list)
    text: str = ""           # the body shown to the user and the agent

    @property
    def index_text(self) -> str:
        """What is indexed and embedded: title and headings carry words the body may lack."""
        return index_text(self.title, self.heading_path, self.text)

    @property
    def text_hash(self) -> str:
        return text_hash(self.index_text)


def index_text(title: str, heading_path: list[str], text: str) -> str:
    lines = [title] if title else []
    headings = [h for h in heading_path if h != title]
    if headings:
        lines.append(HEADING_SEPARATOR.join(headings))
    lines.append(text)
    return "\n".join(lines)


def text_hash(text: str) -> str:
    """The key of the embedding cache: same text, same vector, whatever document it is in."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def chunk_blocks(title: str, blocks: list[Block], size: int = DEFAULT_CHUNK_SIZE,
                 overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[Chunk]:
    if size < 50:
        raise ValueError("chunk size must be at least 50 characters")
    if not 0 <= overlap < size // 2:
        raise ValueError("chunk overlap must be between 0 and half the chunk size")
    chunks: list[Chunk] = []
    for heading_path, paragraphs in _sections(blocks):
        for text in _pack(paragraphs, size, overlap):
            chunks.append(Chunk(len(chunks), title, list(heading_path), text))
    return chunks


def _sections(blocks: list[Block]) -> list[tuple[tuple[str, ...], list[str]]]:
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    for block in blocks:
        path = tuple(block.heading_path)
        if not sections or sections[-1][0] != path:
            sections.append((path, []))
        sections[-1][1].append(block.text.strip())
    return sections


def _pack(paragraphs: list[str], size: int, overlap: int) -> list[str]:
    pieces: list[str] = []
    for paragraph in paragraphs:
        pieces.extend(_split_long(paragraph, size - overlap))
    out: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= size or not current:
            current = candidate
            continue
        out.append(current)
        tail = _tail(current, overlap)
        current = f"{tail} {piece}" if tail else piece
    if current:
        out.append(current)
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?…:;])\s+")


def _split_long(paragraph: str, limit: int) -> list[str]:
    """Cut a paragraph longer than `limit` at sentence ends, falling back to word ends."""
    if len(paragraph) <= limit:
        return [paragraph]
    units: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            units.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if sentence:
            units.append(sentence)
    out: list[str] = []
    for unit in units:
        if out and len(out[-1]) + 1 + len(unit) <= limit:
            out[-1] = f"{out[-1]} {unit}"
        else:
            out.append(unit)
    return out


def _tail(text: str, overlap: int) -> str:
    """The last <= `overlap` characters of `text`, starting at a sentence or word boundary."""
    if overlap <= 0 or len(text) <= overlap:
        return "" if overlap <= 0 else text
    window = text[-overlap:]
    sentence = _SENTENCE_END.search(window)
    if sentence:
        return window[sentence.end():].strip()
    space = window.find(" ")
    return window[space + 1:].strip() if space >= 0 else window
