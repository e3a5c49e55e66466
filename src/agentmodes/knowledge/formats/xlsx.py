"""Excel (.xlsx) with openpyxl: one section per sheet, each row with its column names
(rows.py); cached formula results, not formulas (data_only), and read-only streaming so a
large workbook is not loaded whole."""

from __future__ import annotations

import io

from ..extract_types import Block, Extracted
from .rows import row_blocks


def read_xlsx(stem: str, data: bytes) -> Extracted:
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        title = (book.properties.title or "").strip() if book.properties else ""
        blocks: list[Block] = []
        for sheet in book.worksheets:
            blocks.extend(row_blocks(sheet.iter_rows(values_only=True), [sheet.title]))
    finally:
        book.close()
    return Extracted(title or stem, blocks)
