"""EPUB with EbookLib: the chapters in reading (spine) order, each an XHTML document read by
the HTML reader, so its h1-h6 give the heading path; the book's title from its metadata."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from ..extract_types import Block, Extracted


def read_epub(stem: str, data: bytes) -> Extracted:
    import ebooklib
    from ebooklib import epub

    from ..extract import _extract_html, decode_text

    with tempfile.NamedTemporaryFile(suffix=".epub") as handle:   # EbookLib reads paths
        handle.write(data)
        handle.flush()
        book = epub.read_epub(handle.name, options={"ignore_ncx": True})
    found = book.get_metadata("DC", "title")
    title = found[0][0].strip() if found and found[0][0] else ""
    items = {item.get_id(): item for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT)}
    order = [items[ref] for ref, _ in book.spine if ref in items] or list(items.values())
    blocks: list[Block] = []
    from bs4 import XMLParsedAsHTMLWarning

    for item in order:
        with warnings.catch_warnings():     # XHTML read as HTML on purpose: same rules
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            chapter = _extract_html(Path(item.get_name()), decode_text(item.get_content()))
        blocks.extend(chapter.blocks)
    return Extracted(title or stem, blocks)
