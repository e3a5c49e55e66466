"""What every format reader returns (extract.py and formats/): a title and text blocks,
each under its heading path; and the one error a reader raises for a file it cannot read."""

from __future__ import annotations

from dataclasses import dataclass, field


class UnreadableFile(Exception):
    """The file cannot be turned into text; str(err) is the reason shown to the user."""


@dataclass(slots=True)
class Block:
    text: str
    heading_path: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Extracted:
    title: str
    blocks: list[Block]


def is_url(value: object) -> bool:
    """An http(s) URL to ingest as a web page (here, not in web_pages.py, so that telling
    paths from URLs does not import httpx: a search-only process never needs it)."""
    return isinstance(value, str) and value.lower().startswith(("http://", "https://"))
