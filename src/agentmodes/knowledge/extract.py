"""Turn a file into a title and a list of structured text blocks.

Every format ends up as the same thing: `Block`s (a paragraph, list item, table row or code
block) tagged with the heading path they sit under. The chunker then only has to follow that
structure, whatever the source format was.

A file that cannot be read is never an exception for the caller to guess at: `extract` raises
`UnreadableFile` with a one-line reason, and ingest records it as a skipped file.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from .extract_types import Block, Extracted, UnreadableFile  # noqa: F401  (re-exported)
from .formats import OFFICE_SUFFIXES, TABLE_SUFFIXES, ZIP_SIGNATURE, reader_for

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}
TEXT_SUFFIXES = {".txt", ".text", ".rst"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
PDF_SUFFIXES = {".pdf"}
SUPPORTED_SUFFIXES = (MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES
                      | OFFICE_SUFFIXES | TABLE_SUFFIXES)
FORMAT_NAMES = ("Markdown, plain text, HTML, PDF, Word (.docx), PowerPoint (.pptx), "
                "Excel (.xlsx), EPUB, CSV/TSV")


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def extract(path: Path, data: bytes) -> Extracted:
    """Extract title and blocks from `data` (the bytes of `path`), chosen by file suffix."""
    suffix = path.suffix.lower()
    if not data.strip():
        raise UnreadableFile("empty file")
    if suffix in PDF_SUFFIXES:
        result = _extract_pdf(path, data)
    elif (reader := reader_for(suffix)) is not None:
        result = _read_format(reader, suffix, path, data)
    elif suffix in HTML_SUFFIXES:
        result = _extract_html(path, decode_text(data, sniff_binary=True))
    elif suffix in MARKDOWN_SUFFIXES:
        result = _extract_markdown(path, decode_text(data))
    elif suffix in TEXT_SUFFIXES:
        result = Extracted(path.stem, [Block(p) for p in _paragraphs(decode_text(data))])
    else:
        raise UnreadableFile(f"unsupported file type '{suffix or path.name}'")
    result.blocks = [b for b in result.blocks if b.text.strip()]
    if not result.blocks:
        raise UnreadableFile("no extractable text")
    return result


def _read_format(reader, suffix: str, path: Path, data: bytes) -> Extracted:
    """A reader from formats/: a damaged file is a skip with a reason, never a crash (the
    zip and XML libraries raise many exception types on broken files)."""
    if suffix in OFFICE_SUFFIXES and not data.startswith(ZIP_SIGNATURE):
        raise UnreadableFile(f"not a {suffix[1:].upper()} file (no zip container)")
    try:
        return reader(path.stem, data)
    except UnreadableFile:
        raise
    except Exception as err:  # noqa: BLE001 - see docstring
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UnreadableFile(f"damaged {suffix[1:].upper()} file: {detail[:160]}") from None


def content_problem(suffix: str, head: bytes) -> str | None:
    """Why the first bytes of a file cannot be what its suffix says, or None.

    For uploads, which are checked before they are stored: binary formats by signature,
    text by the same rules ingest decodes it with (any encoding, but no binary content);
    the full decoding happens at ingest.
    """
    suffix = suffix.lower()
    if suffix in PDF_SUFFIXES:
        return None if head.startswith(b"%PDF-") else "content is not a PDF file"
    if suffix in OFFICE_SUFFIXES:
        return None if head.startswith(ZIP_SIGNATURE) else \
            f"content is not a {suffix[1:].upper()} file"
    if _looks_like_utf16(head):
        return None
    if b"\x00" in head:
        return "binary content in a text file type"
    sample = head.decode("latin-1")
    if sample and len(_CONTROL.findall(sample)) > 0.05 * len(sample):
        return "binary content in a text file type"
    return None


# --- text decoding -----------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def decode_text(data: bytes, sniff_binary: bool = True) -> str:
    """UTF-8 first (with or without BOM); otherwise the charset charset_normalizer detects.

    NUL bytes or a high share of control characters mean the file is binary whatever its
    name says: decoding it "successfully" in some 8-bit code page would only index noise.
    """
    head = data[:65536]
    if sniff_binary and b"\x00" in head and not _looks_like_utf16(head):
        raise UnreadableFile("binary content, not text")
    try:
        text = data.decode("utf-16") if _looks_like_utf16(head) else data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = _western(data)
        if text is None:
            from charset_normalizer import from_bytes

            best = from_bytes(data).best()
            if best is None:
                raise UnreadableFile("not text: unknown or binary encoding") from None
            text = str(best)
    sample = text[:65536]
    if sample and len(_CONTROL.findall(sample)) > 0.05 * len(sample):
        raise UnreadableFile("binary content, not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Non-ASCII characters of German, French, Spanish, ... text in Windows-1252 / Latin-1.
_WESTERN = set("äöüÄÖÜßéèêëàâáíìîïóòôúùûçñÉÈÊÀÂÇÑÓÚ€„“”‚‘’–—…«»°§²³µ·×")


def _western(data: bytes) -> str | None:
    """Windows-1252, when the text reads as Western European text in it.

    charset_normalizer guesses badly on short files: a three-line German CSV in cp1252
    came back as cp775 ("N³rnberg"). cp1252 is by far the most common legacy encoding of
    the documents this KB reads, so it is taken when every non-ASCII character decodes to a
    common Western letter or sign and such characters are a small share of the letters;
    Cyrillic, Greek or Central European text fails that test and goes to the detector."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = sum(ch.isalpha() for ch in text)
    special = [ch for ch in text if ord(ch) > 127]
    if not special or any(ch not in _WESTERN for ch in special):
        return None
    return text if len(special) <= 0.15 * max(letters, 1) else None


def _looks_like_utf16(head: bytes) -> bool:
    return head.startswith((b"\xff\xfe", b"\xfe\xff"))


def _paragraphs(text: str) -> list[str]:
    """Split plain text on blank lines; lines inside a paragraph are joined with spaces."""
    out = []
    for part in re.split(r"\n\s*\n", text):
        joined = re.sub(r"-\n(?=[a-zäöüß])", "", part.strip())  # de-hyphenate wrapped words
        joined = re.sub(r"\s*\n\s*", " ", joined)
        if joined:
            out.append(joined)
    return out


# --- Markdown ----------------------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(?:---|\.\.\.)\n", re.S)


def _extract_markdown(path: Path, text: str) -> Extracted:
    """Walk markdown-it tokens: headings set the path, every leaf block becomes a Block."""
    from markdown_it import MarkdownIt

    title = ""
    match = _FRONT_MATTER.match(text)
    if match:
        found = re.search(r"^title:\s*['\"]?(.+?)['\"]?\s*$", match.group(1), re.M)
        title = found.group(1) if found else ""
        text = text[match.end():]

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    row: list[str] | None = None  # cells of the table row being read, None outside tables
    pending_heading: int | None = None
    list_depth = 0
    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            pending_heading = int(token.tag[1])
        elif kind == "inline" and pending_heading is not None:
            level, name = pending_heading, _inline_text(token)
            headings = [h for h in headings if h[0] < level] + [(level, name)]
            if level == 1 and not title:
                title = name
            pending_heading = None
        elif kind in ("bullet_list_open", "ordered_list_open"):
            list_depth += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            list_depth -= 1
        elif kind == "tr_open":
            row = []
        elif kind == "inline" and row is not None:
            row.append(_inline_text(token))
        elif kind == "tr_close" and row is not None:
            blocks.append(Block(" | ".join(row), [h[1] for h in headings]))
            row = None
        elif kind == "inline":
            prefix = "- " if list_depth else ""
            blocks.append(Block(prefix + _inline_text(token), [h[1] for h in headings]))
        elif kind in ("fence", "code_block"):
            blocks.append(Block(token.content.rstrip(), [h[1] for h in headings]))
        elif kind == "html_block":  # raw HTML inside Markdown: keep its words, not its tags
            blocks.append(Block(_html_words(token.content), [h[1] for h in headings]))
    return Extracted(title or path.stem, blocks)


def _inline_text(token) -> str:
    """The words of an inline token: markup dropped, links keep their text, images their alt."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _html_words(fragment: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(fragment, "lxml")
    for tag in soup.find_all(_DROP):
        tag.decompose()
    return " ".join(soup.get_text(" ").split())


# --- HTML --------------------------------------------------------------------------------

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_DROP = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "form",
         "button", "select", "head"}
_BLOCKS = {"p", "li", "pre", "blockquote", "tr", "dt", "dd", "figcaption", "caption",
           "address", "summary"}


def _extract_html(path: Path, text: str) -> Extracted:
    """Walk the DOM in order with BeautifulSoup (lxml parser), following h1-h6 for structure.

    Scripts, styles and navigation are dropped; <main> (or <article>) is preferred over the
    whole body when present, since site chrome around it is not the document.
    """
    from bs4 import BeautifulSoup, NavigableString, Tag
    from bs4.element import Comment

    soup = BeautifulSoup(text, "lxml")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup

    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    inline: list[str] = []

    def flush() -> None:
        joined = " ".join(" ".join(inline).split())
        inline.clear()
        if joined:
            blocks.append(Block(joined, [h[1] for h in headings]))

    def walk(node: Tag) -> None:
        nonlocal headings
        for child in node.children:
            if isinstance(child, Comment):
                continue
            if isinstance(child, NavigableString):
                inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name in _HEADINGS:
                flush()
                level, heading = int(name[1]), child.get_text(" ", strip=True)
                if heading:
                    headings = [h for h in headings if h[0] < level] + [(level, heading)]
            elif name in _BLOCKS and not child.find(list(_BLOCKS | _HEADINGS)):
                flush()
                separator = " | " if name == "tr" else " "
                words = child.get_text(separator, strip=True)
                inline.append(("- " + words) if name == "li" else words)
                flush()
            elif name in _BLOCKS or name in {"div", "section", "article", "main", "ul", "ol",
                                             "table", "tbody", "thead", "dl", "body", "header",
                                             "footer", "aside", "details", "figure", "br", "hr"}:
                flush()
                if name == "li":  # a list item holding a nested list keeps its bullet
                    inline.append("-")
                walk(child)
                flush()
            else:  # inline element: its words belong to the surrounding paragraph
                inline.append(child.get_text(" "))
        return None

    walk(root)
    flush()
    if not title:
        first = next((h for h in soup.find_all("h1")), None)
        title = first.get_text(" ", strip=True) if first else path.stem
    return Extracted(title, blocks)


# --- PDF ---------------------------------------------------------------------------------

def _extract_pdf(path: Path, data: bytes) -> Extracted:
    """Text per page with pypdf. The heading path is the PDF's bookmark (outline) in effect
    on that page, if it has bookmarks, then "Page N" for citations. (A page where a new
    bookmark starts is filed under that bookmark as a whole: pypdf gives no text position.)

    A broken or encrypted PDF is a skip with a reason, never a crash: pypdf raises many
    different exception types on damaged files, so every failure is caught here.
    """
    import io

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # damaged files log noisily
    if b"%PDF" not in data[:1024]:
        raise UnreadableFile("not a PDF file (no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableFile("encrypted PDF (password required)")
        title = ""
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title).strip()
        starts = _bookmarks_by_page(reader)
        blocks = []
        section: list[str] = []
        for index, page in enumerate(reader.pages):
            section = starts.get(index, section)
            for paragraph in _paragraphs(page.extract_text() or ""):
                blocks.append(Block(paragraph, [*section, f"Page {index + 1}"]))
    except UnreadableFile:
        raise
    except Exception as err:  # noqa: BLE001 - see docstring
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UnreadableFile(f"damaged PDF: {detail[:160]}") from None
    return Extracted(title or path.stem, blocks)


def _bookmarks_by_page(reader) -> dict[int, list[str]]:
    """0-based page -> bookmark path of the last bookmark that starts on it."""
    starts: dict[int, list[str]] = {}

    def walk(items: list, parents: list[str]) -> None:
        last: str | None = None
        for item in items:
            if isinstance(item, list):  # children of the previous bookmark
                walk(item, parents + [last] if last else parents)
                continue
            last = str(getattr(item, "title", "") or "").strip() or None
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # noqa: BLE001 - a broken bookmark only loses its heading
                continue
            if last and page is not None and page >= 0:
                starts[page] = parents + [last]

    try:
        walk(list(reader.outline), [])
    except Exception:  # noqa: BLE001 - a broken outline must not lose the text
        return {}
    return starts
