"""PowerPoint (.pptx) with python-pptx: one section per slide ("Slide 3: Pricing"), its text
frames top to bottom, tables with their header, and the speaker notes, which often hold
what the slide only hints at."""

from __future__ import annotations

import io

from ..extract_types import Block, Extracted
from .rows import row_blocks


def read_pptx(stem: str, data: bytes) -> Extracted:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    title = (deck.core_properties.title or "").strip()
    blocks: list[Block] = []
    for number, slide in enumerate(deck.slides, start=1):
        heading = _slide_title(slide)
        path = [f"Slide {number}: {heading}" if heading else f"Slide {number}"]
        if number == 1 and heading and not title:
            title = heading
        shapes = sorted(slide.shapes, key=lambda s: (s.top or 0, s.left or 0))
        for shape in shapes:
            if shape.has_text_frame and shape != getattr(slide.shapes, "title", None):
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text:
                        blocks.append(Block(("- " if paragraph.level else "") + text, path))
            elif getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                blocks.extend(row_blocks(rows, path))
        if slide.has_notes_slide:
            notes = " ".join(slide.notes_slide.notes_text_frame.text.split())
            if notes:
                blocks.append(Block(f"Notes: {notes}", path))
    return Extracted(title or stem, blocks)


def _slide_title(slide) -> str:
    shape = slide.shapes.title
    return " ".join(shape.text_frame.text.split()) if shape is not None and \
        shape.has_text_frame else ""
