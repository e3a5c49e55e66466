"""Web pages and sitemaps as documents: `agentmodes ingest https://example.com/docs/page`.

A URL is fetched with httpx (timeouts, a size cap, redirects followed); a sitemap (XML
urlset or sitemap index, or a URL ending in .xml) is expanded into its pages with
trafilatura's sitemap parser; each page's main content is taken by trafilatura (menus,
footers and cookie banners dropped) as Markdown, so headings become the heading path like
any Markdown file, and the URL is the document's source (citations link to it).

Fetching is ours, not trafilatura's downloader: that one refuses private addresses (SSRF
protection for crawlers), while the user who names an intranet URL on the command line
means it. Pages are incremental like files: same main text, same hash, "unchanged".
"""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional
from urllib.parse import urlsplit

import httpx

from .chunking import chunk_blocks
from .extract_types import Extracted, UnreadableFile, is_url  # noqa: F401 (re-exported)
from .types import IngestReport, SkippedFile

MAX_PAGE_BYTES = 20 * 1024 * 1024
MAX_PAGES = 1000                 # pages taken from one sitemap
TIMEOUT_S = 20.0
USER_AGENT = "agentmodes-ingest (+https://pypi.org/project/agentmodes/)"
Progress = Callable[[str, int, int, str], None]


@dataclass(slots=True)
class Fetched:
    url: str                     # after redirects
    content_type: str
    text: str


def fetch(client: httpx.Client, url: str) -> Fetched:
    """GET a URL as text; one-line UnreadableFile for anything that is not a readable page."""
    try:
        with client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise UnreadableFile(f"HTTP {response.status_code}")
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_PAGE_BYTES:
                    raise UnreadableFile(f"larger than {MAX_PAGE_BYTES >> 20} MB")
                chunks.append(chunk)
            data = b"".join(chunks)
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            encoding = response.encoding or "utf-8"
            final = str(response.url)
    except httpx.HTTPError as err:
        raise UnreadableFile(f"cannot fetch: {type(err).__name__}: {err}"[:200]) from None
    if url.endswith(".gz") or data[:2] == b"\x1f\x8b":
        import gzip
        try:
            data = gzip.decompress(data)
        except OSError as err:
            raise UnreadableFile(f"bad gzip data: {err}") from None
    from .extract import decode_text
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        text = decode_text(data)
    return Fetched(final, kind, text)


def looks_like_sitemap(url: str, fetched: Fetched) -> bool:
    head = fetched.text[:2000].lower()
    return "<urlset" in head or "<sitemapindex" in head or (
        urlsplit(url).path.endswith((".xml", ".xml.gz")) and "xml" in fetched.content_type)


def sitemap_pages(client: httpx.Client, url: str, first: Fetched,
                  max_pages: int = MAX_PAGES) -> list[str]:
    """The page URLs of a sitemap, following nested sitemap indexes: trafilatura parses
    (XML, plain-text sitemaps, hreflang), we fetch and keep links on the sitemap's host."""
    parts = urlsplit(url)
    sitemap = _sitemap_type()(f"{parts.scheme}://{parts.netloc}", parts.netloc, [])
    sitemap.current_url, sitemap.content = url, first.text
    sitemap.seen.add(url)
    while True:
        sitemap.process()
        pending = [s for s in sitemap.sitemap_urls if s not in sitemap.seen]
        sitemap.sitemap_urls = pending
        if not pending or len(sitemap.seen) >= 50 or len(sitemap.urls) >= max_pages:
            break
        sitemap.current_url = pending.pop()
        sitemap.seen.add(sitemap.current_url)
        try:
            sitemap.content = fetch(client, sitemap.current_url).text
        except UnreadableFile:
            sitemap.content = ""
    return list(dict.fromkeys(sitemap.urls))[:max_pages]


@functools.cache
def _sitemap_type() -> type:
    """Built on first use: trafilatura is imported only when a sitemap is read."""
    from trafilatura.sitemaps import DETECT_SITEMAP_LINK, SitemapObject, safe_relative_url

    class Sitemap(SitemapObject):
        """trafilatura's sitemap, with its link check by host: its own check extracts a
        registered domain and so drops every link of an IP-addressed or intranet host."""

        __slots__ = ()

        def handle_link(self, link: str) -> None:
            link = safe_relative_url(self.base_url, link)
            if not link or link == self.current_url or urlsplit(link).netloc != self.domain:
                return
            (self.sitemap_urls if DETECT_SITEMAP_LINK.search(link) else self.urls).append(link)

    return Sitemap




def page_document(url: str, html: str) -> Extracted:
    """The page's main content as Markdown (trafilatura), read like a Markdown file; the
    whole page through the HTML reader when trafilatura finds no main content."""
    import trafilatura

    from .extract import _extract_html, _extract_markdown

    name = Path(urlsplit(url).path or "/").name or urlsplit(url).netloc
    markdown = trafilatura.extract(html, url=url, output_format="markdown", with_metadata=True,
                                   include_tables=True, include_links=False, favor_recall=True)
    if markdown and markdown.strip():
        result = _extract_markdown(Path(name), markdown)
    else:
        result = _extract_html(Path(name), html)
    result.blocks = [b for b in result.blocks if b.text.strip()]
    if not result.blocks:
        raise UnreadableFile("no extractable text on the page")
    return result


def ingest_urls(store, urls: Iterable[str], *, chunking, report: IngestReport,
                progress: Optional[Progress] = None, force: bool = False,
                client: Optional[httpx.Client] = None) -> None:
    """Fetch, extract and store every page the URLs name (sitemaps expanded)."""
    own = client is None
    client = client or httpx.Client(timeout=TIMEOUT_S, follow_redirects=True,
                                    headers={"User-Agent": USER_AGENT})
    try:
        pages: list[tuple[str, Optional[Fetched]]] = []
        for url in urls:
            try:
                first = fetch(client, url)
            except UnreadableFile as err:
                report.skipped.append(SkippedFile(url, str(err)))
                continue
            if looks_like_sitemap(url, first):
                found = sitemap_pages(client, url, first)
                if not found:
                    report.skipped.append(SkippedFile(url, "sitemap lists no pages"))
                pages.extend((page, None) for page in found)
            else:
                pages.append((url, first))
        for done, (url, fetched) in enumerate(pages):
            if progress:
                progress("read", done, len(pages), url)
            _ingest_page(store, client, url, fetched, chunking, force, report)
        if progress:
            progress("read", len(pages), len(pages), "")
    finally:
        if own:
            client.close()


def _ingest_page(store, client: httpx.Client, url: str, fetched: Optional[Fetched],
                 chunking, force: bool, report: IngestReport) -> None:
    try:
        fetched = fetched or fetch(client, url)
        if fetched.content_type and "html" not in fetched.content_type \
                and "xml" not in fetched.content_type and "text" not in fetched.content_type:
            raise UnreadableFile(f"not a web page ({fetched.content_type})")
        extracted = page_document(url, fetched.text)
        chunks = chunk_blocks(extracted.title, extracted.blocks, chunking.size, chunking.overlap)
    except UnreadableFile as err:
        report.skipped.append(SkippedFile(url, str(err)))
        return
    except Exception as err:  # noqa: BLE001 - one odd page must not stop the others
        report.skipped.append(SkippedFile(url, f"could not extract text ({type(err).__name__}: "
                                               f"{str(err)[:120]})"))
        return
    # The hash is of the text kept, so a page whose ads or dates changed is "unchanged".
    digest = hashlib.sha256("\n".join(b.text for b in extracted.blocks).encode()).hexdigest()
    root = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}/"
    status = store.replace_document(url, root, extracted.title, digest, time.time(),
                                    len(fetched.text), chunks, force=force)
    getattr(report, {"added": "added", "updated": "updated"}.get(status, "unchanged")).append(url)
    if status in ("added", "updated"):
        report.chunks_added += len(chunks)
