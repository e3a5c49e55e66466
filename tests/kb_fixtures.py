"""Shared helpers for the knowledge-base tests: a deterministic embedder and real test files."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np


class HashingEmbedder:
    """A small deterministic bag-of-words embedder (hashing trick), so tests need no model.

    Texts sharing words get similar vectors, which is enough to check that semantic and
    hybrid search find the right chunk; `calls` records every passage it was asked to embed.
    """

    def __init__(self, name: str = "test:hashing-64", dim: int = 64) -> None:
        self.name = name
        self.dim = dim
        self.passages: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word[:6].encode(), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % self.dim] += 1.0
        norm = np.linalg.norm(vec)
        return vec / norm if norm else vec

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.passages.extend(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else \
            np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


MARKDOWN = """---
title: Handbuch der DG Agentur
---
# DG Agentur

Die DG Agentur berät Menschen in Ostbelgien bei Fragen zu Arbeit und Wohnen.

## Öffnungszeiten

Die Öffnungszeit ist montags bis freitags von 8 bis 16 Uhr. Samstags bleibt das Büro zu.

## Kontakt

- Telefon 087 123 456
- E-Mail info@example.org

| Stadt | Adresse |
|---|---|
| Eupen | Hauptstraße 1 |
"""

HTML = """<!doctype html><html><head><title>Volcano Guide</title>
<style>body { color: red }</style><script>var tracking = "secretscriptword";</script></head>
<body><nav><a href="/">Home</a> navigationword</nav>
<main><h1>Volcanoes</h1><p>A volcano is a rupture in the crust of a planet.</p>
<h2>Eruptions</h2><p>Lava flows from the vent during an eruption; ash clouds can ground planes.</p>
<ul><li>Effusive eruptions</li><li>Explosive eruptions</li></ul></main></body></html>
"""

PDF_TEXT = ("Photosynthesis converts light energy into chemical energy. "
            "Chlorophyll absorbs mostly blue and red light.")


def write_pdf(path: Path, text: str = PDF_TEXT, title: str = "Plant Biology",
              bookmarks: bool = False) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    if bookmarks:
        pdf.start_section("Light reactions")
    pdf.multi_cell(0, 8, text)
    pdf.add_page()
    if bookmarks:
        pdf.start_section("Dark reactions", level=1)
    pdf.multi_cell(0, 8, "Second page about the Calvin cycle and carbon fixation.")
    pdf.output(str(path))
    return path


def make_corpus(folder: Path) -> Path:
    """A folder with one file of each supported kind."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agentur.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "volcano.html").write_text(HTML, encoding="utf-8")
    write_pdf(folder / "plants.pdf")
    (folder / "notes.txt").write_text("Ferries leave the harbour every hour.\n\n"
                                      "The last ferry departs at midnight.", encoding="utf-8")
    return folder


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def numbered_reports(folder: Path, count: int, start: int = 0) -> Path:
    """`count` one-line reports, each with its own code word (zq007x) to search for."""
    folder.mkdir(exist_ok=True)
    for i in range(start, start + count):
        (folder / f"doc{i:03}.md").write_text(
            f"# Report {i}\n\nThe code word of report {i} is zq{i:03}x and it covers topic "
            f"{i * 3}.\n", encoding="utf-8")
    return folder


def examples_kb(path: Path) -> Path:
    """The project's example documents in a KB file at `path` (lexical only: no model)."""
    from agentmodes.knowledge.base import KnowledgeBase

    with KnowledgeBase.open(path) as base:
        base.ingest(EXAMPLES, embed=False)
    return path


def scripted_replies(folder: Path, items) -> Path:
    """A replies file for `--llm scripted:FILE`."""
    import json

    path = folder / "replies.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path
