"""Word (.docx) with python-docx: paragraphs and tables in document order, headings as the
heading path (the built-in "Heading N" and "Title" styles, or an outline level), list
paragraphs as "- " items, table rows with their header (rows.py)."""

from __future__ import annotations

import io
import re

from ..extract_types import Block, Extracted
from .rows import row_blocks

_LEVEL = re.compile(r"^(?:heading|überschrift|titre|título)\s*(\d)$", re.IGNORECASE)


def heading_level(paragraph) -> int | None:
    """1-9 for a heading paragraph, 0 for the document title, None for body text."""
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name.lower() == "title":
        return 0
    match = _LEVEL.match(name.strip())
    if match:
        return int(match.group(1))
    outline = paragraph._p.find(".//{*}outlineLvl")      # a custom style with an outline level
    if outline is not None:
        value = outline.get("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}val")
        if value and value.isdigit() and int(value) < 9:
            return int(value) + 1
    return None


def read_docx(stem: str, data: bytes) -> Extracted:
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = Document(io.BytesIO(data))
    title = (document.core_properties.title or "").strip()
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        path = [h[1] for h in headings]
        if isinstance(item, Table):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            blocks.extend(row_blocks(_dedupe_merged(rows), path))
            continue
        if not isinstance(item, Paragraph):
            continue
        text = " ".join(item.text.split())
        if not text:
            continue
        level = heading_level(item)
        if level == 0:
            title = title or text
        elif level is not None:
            headings = [h for h in headings if h[0] < level] + [(level, text)]
            if level == 1 and not title:
                title = text
        else:
            style = (item.style.name if item.style is not None else "") or ""
            is_item = style.lower().startswith("list") or item._p.find(".//{*}numPr") is not None
            blocks.append(Block(("- " if is_item else "") + text, path))
    return Extracted(title or stem, blocks)


def _dedupe_merged(rows: list[list[str]]) -> list[list[str]]:
    """python-docx repeats a merged cell's text in every grid cell it spans: keep it once."""
    out = []
    for row in rows:
        cells: list[str] = []
        for cell in row:
            cells.append("" if cells and cell == cells[-1] and cell else cell)
        out.append(cells)
    return out
