"""Rows a backend hands back: a stored document and a stored chunk (the same for every backend)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DocumentRow:
    id: int
    path: str
    root: str
    title: str
    content_hash: str
    mtime: float
    size: int


@dataclass(slots=True)
class ChunkRow:
    id: int
    doc_id: int
    position: int
    title: str
    heading_path: list[str]
    text: str
    text_hash: str
    source: str
