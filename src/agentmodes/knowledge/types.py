"""Values the knowledge base hands to the rest of the project."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SearchMode = Literal["lexical", "semantic", "hybrid"]


@dataclass(slots=True)
class Hit:
    """One search result.

    `score` is the raw score of the method that produced it (BM25, cosine, fused) and is only
    comparable within one result list. `confidence` is calibrated (0..1) and means the same
    for every mode: the estimated probability that this hit is relevant to the query; the
    agent loop compares it with a documented threshold for its adaptive exit.
    """

    chunk_id: int
    title: str
    source: str
    text: str
    score: float
    confidence: float
    heading_path: list[str] = field(default_factory=list)
    position: int = 0
    doc_id: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class DocumentInfo:
    """One ingested document as a viewer lists it (`name` is its path below the ingest root)."""

    id: int
    title: str
    name: str
    path: str
    size: int
    chunks: int
    ingested_at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Passage:
    """One stored chunk of a document, in reading order (what a citation points at)."""

    chunk_id: int
    doc_id: int
    position: int
    title: str
    heading_path: list[str]
    text: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class SkippedFile:
    path: str
    reason: str


@dataclass(slots=True)
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    chunks_added: int = 0
    embedded: int = 0          # passages actually sent to the embedder (cache misses)
    pending_embeddings: int = 0  # chunks searchable lexically but not yet embedded

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
