"""Readers for the office, e-book and table formats, one small module per format.

Each reader turns the bytes of one file into the same `Extracted` (title + `Block`s under
their heading path) that the Markdown, HTML and PDF readers in extract.py produce, keeping
the structure a citation should point at: Word headings, slides, sheets, e-book chapters,
table rows with their column names. The libraries are the single-format ones (python-docx,
python-pptx, openpyxl, EbookLib, the csv module) rather than markitdown: they hand over
that structure directly, and `agentmodes bench formats` measured the chunks both give on
the same files (benchmarks/results/formats.md).
"""

from __future__ import annotations

from typing import Callable

from ..extract_types import Extracted

Reader = Callable[[str, bytes], Extracted]      # (file name stem, bytes) -> Extracted

OFFICE_SUFFIXES = {".docx", ".pptx", ".xlsx", ".epub"}   # zip containers
TABLE_SUFFIXES = {".csv", ".tsv"}
ZIP_SIGNATURE = b"PK\x03\x04"


def reader_for(suffix: str) -> Reader | None:
    """The reader of a format, imported on first use (each library loads only when needed)."""
    if suffix == ".docx":
        from .docx import read_docx
        return read_docx
    if suffix == ".pptx":
        from .pptx import read_pptx
        return read_pptx
    if suffix == ".xlsx":
        from .xlsx import read_xlsx
        return read_xlsx
    if suffix == ".epub":
        from .epub import read_epub
        return read_epub
    if suffix in TABLE_SUFFIXES:
        from .delimited import read_delimited
        return read_delimited
    return None
