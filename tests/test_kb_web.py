"""`agentmodes ingest https://...` against a real HTTP server on loopback: a page, a
sitemap index with a nested sitemap, boilerplate dropped, the URL as the source,
incremental re-ingest, and dead links skipped with a reason."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

PAGE = """<html><head><title>{title} | DG Agentur</title></head><body>
<nav><a href="/">Start</a> <a href="/team.html">Team</a> Menu Navigation Cookie-Hinweis</nav>
<main><h1>{title}</h1><p>{intro}</p><h2>{section}</h2><p>{body}</p></main>
<footer>© DG Agentur · Impressum · Datenschutz</footer></body></html>"""


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(QuietHandler, directory=str(root)))
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pages = {
        "kontakt.html": PAGE.format(
            title="Kontakt", intro="So erreichen Sie die DG Agentur in Nürnberg.",
            section="Telefon", body="Rufen Sie uns an unter +49 911 97554990, Montag bis "
            "Freitag von 9 bis 18 Uhr. Samstags sind wir nach Vereinbarung da."),
        "team.html": PAGE.format(
            title="Team", intro="Zwölf Menschen arbeiten bei uns, gegenüber dem Hauptbahnhof.",
            section="Gründung", body="Daniela Graf gründete die Agentur im Jahr 2014 und "
            "leitet sie bis heute gemeinsam mit zwei Partnern."),
    }
    for name, html in pages.items():
        (root / name).write_text(html, encoding="utf-8")
    (root / "pages.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
        f'schemas/sitemap/0.9"><url><loc>{base}/team.html</loc></url>'
        f'<url><loc>{base}/gone.html</loc></url></urlset>', encoding="utf-8")
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/'
        f'schemas/sitemap/0.9"><sitemap><loc>{base}/pages.xml</loc></sitemap></sitemapindex>',
        encoding="utf-8")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base, root
    server.shutdown()
    server.server_close()


def ingest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "AGENTMODES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "agentmodes", "ingest", *args, "--kb",
                           str(tmp_path / "kb.db"), "--no-embed", "--json"],
                          capture_output=True, text=True, timeout=120, env=env)


def files(done: subprocess.CompletedProcess) -> dict[str, dict]:
    return {r["path"]: r for r in map(json.loads, done.stdout.splitlines()) if r["type"] == "file"}


def test_page_and_sitemap_ingest_with_urls_as_sources(tmp_path, site):
    from agentmodes.knowledge.base import KnowledgeBase

    base, root = site
    done = ingest(tmp_path, f"{base}/kontakt.html", f"{base}/sitemap.xml")
    assert done.returncode == 0, done.stderr
    seen = files(done)
    assert seen[f"{base}/kontakt.html"]["result"] == "added"
    assert seen[f"{base}/team.html"]["result"] == "added"
    assert seen[f"{base}/gone.html"] == {"type": "file", "path": f"{base}/gone.html",
                                         "result": "skipped", "reason": "HTTP 404"}
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        hit = kb.search("Telefon Montag bis Freitag", mode="lexical", k=1)[0]
        assert hit.source == f"{base}/kontakt.html" and hit.heading_path[-1] == "Telefon"
        assert "97554990" in hit.text
        texts = " ".join(p.text for d in kb.documents() for p in kb.passages(d.id))
        assert "Impressum" not in texts and "Cookie-Hinweis" not in texts   # boilerplate
        assert "Daniela Graf" in texts

    again = ingest(tmp_path, f"{base}/kontakt.html")
    assert files(again)[f"{base}/kontakt.html"]["result"] == "unchanged"
    html = (root / "kontakt.html").read_text(encoding="utf-8")
    (root / "kontakt.html").write_text(html.replace("9 bis 18", "8 bis 17"), encoding="utf-8")
    changed = ingest(tmp_path, f"{base}/kontakt.html")
    assert files(changed)[f"{base}/kontakt.html"]["result"] == "updated"


def test_unreachable_url_is_a_skip_and_exit_one(tmp_path, site):
    base, _ = site
    done = ingest(tmp_path, f"{base}/nothing-here.html")
    assert done.returncode == 1
    assert files(done)[f"{base}/nothing-here.html"]["reason"] == "HTTP 404"
