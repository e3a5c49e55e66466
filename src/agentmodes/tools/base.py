"""The Tool protocol: what a mode can call, and what comes back.

A tool never raises into the loop for a bad argument or a failed backend: it returns a
ToolResult whose text says what went wrong, so the model can read it and recover.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable


@dataclass(slots=True)
class Source:
    """A citable source: answers cite it as [n] where n is its position in the run."""

    title: str
    source: str                 # file path or URL
    text: str = ""
    chunk_id: Optional[int] = None
    score: float = 0.0
    confidence: float = 0.0
    url: Optional[str] = None

    def key(self) -> tuple:
        return (self.chunk_id, self.source, self.title) if self.chunk_id is not None \
            else (self.source, self.title, self.text[:80])

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "source": self.source, "text": self.text,
                "chunk_id": self.chunk_id, "score": self.score,
                "confidence": self.confidence, "url": self.url}


@dataclass(slots=True)
class ToolResult:
    text: str                                   # the observation shown to the model
    sources: list[Source] = field(default_factory=list)
    # Highest calibrated confidence among the hits (0 if none); drives adaptive exit.
    confidence: float = 0.0
    error: bool = False
    ends_episode: bool = False                  # respond(answer) ends the loop
    # For seed 004's rule heuristic: did the action change anything (None: the loop decides:
    # no error and, for a search, a source not seen before), and where the actor now is
    # (environments with places, e.g. ALFWorld; None for the knowledge base's tools).
    effect: Optional[bool] = None
    location: Optional[str] = None


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str            # one line, used in the prompt's tool list
    description_de: str

    def __call__(self, argument: str) -> ToolResult:
        ...
