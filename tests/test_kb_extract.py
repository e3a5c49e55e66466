"""Extraction and chunking on real files: structure kept, junk refused with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from kb_fixtures import HTML, MARKDOWN, write_pdf

from agentmodes.knowledge.chunking import chunk_blocks
from agentmodes.knowledge.extract import Block, UnreadableFile, extract


def _extract(path: Path):
    return extract(path, path.read_bytes())


def test_markdown_keeps_title_heading_path_lists_and_tables(tmp_path):
    path = tmp_path / "agentur.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    doc = _extract(path)
    assert doc.title == "Handbuch der DG Agentur"  # front matter wins over the H1
    by_text = {b.text: b.heading_path for b in doc.blocks}
    assert by_text["Die DG Agentur berät Menschen in Ostbelgien bei Fragen zu Arbeit und Wohnen."] \
        == ["DG Agentur"]
    opening = next(b for b in doc.blocks if b.text.startswith("Die Öffnungszeit"))
    assert opening.heading_path == ["DG Agentur", "Öffnungszeiten"]
    assert "- Telefon 087 123 456" in by_text
    assert by_text["Eupen | Hauptstraße 1"] == ["DG Agentur", "Kontakt"]
    assert not any("---" in b.text or "title:" in b.text for b in doc.blocks)


def test_html_follows_headings_and_drops_scripts_styles_nav(tmp_path):
    path = tmp_path / "volcano.html"
    path.write_text(HTML, encoding="utf-8")
    doc = _extract(path)
    assert doc.title == "Volcano Guide"
    text = " ".join(b.text for b in doc.blocks)
    assert "secretscriptword" not in text and "navigationword" not in text
    assert "color: red" not in text
    lava = next(b for b in doc.blocks if "Lava flows" in b.text)
    assert lava.heading_path == ["Volcanoes", "Eruptions"]
    assert "- Explosive eruptions" in [b.text for b in doc.blocks]


def test_pdf_text_per_page_with_metadata_title(tmp_path):
    doc = _extract(write_pdf(tmp_path / "plants.pdf"))
    assert doc.title == "Plant Biology"
    first = next(b for b in doc.blocks if "Photosynthesis" in b.text)
    assert first.heading_path == ["Page 1"]
    assert any("Calvin cycle" in b.text and b.heading_path == ["Page 2"] for b in doc.blocks)


def test_pdf_bookmarks_become_the_heading_path(tmp_path):
    doc = _extract(write_pdf(tmp_path / "plants.pdf", bookmarks=True))
    first = next(b for b in doc.blocks if "Photosynthesis" in b.text)
    second = next(b for b in doc.blocks if "Calvin cycle" in b.text)
    assert first.heading_path == ["Light reactions", "Page 1"]
    assert second.heading_path == ["Light reactions", "Dark reactions", "Page 2"]


def test_non_utf8_text_is_decoded_by_detected_charset(tmp_path):
    path = tmp_path / "alt.txt"
    text = ("Die Öffnungszeiten der Behörde in Köln: Montag bis Freitag. Grüße an alle, "
            "die später kommen; für Rückfragen steht das Büro zur Verfügung.")
    path.write_bytes(text.encode("cp1252"))
    doc = _extract(path)
    assert doc.blocks[0].text == text
    assert doc.title == "alt"


@pytest.mark.parametrize("name, data, reason", [
    ("junk.txt", bytes(range(256)) * 20, "binary"),
    ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage", "damaged PDF"),
    ("fake.pdf", b"just some text pretending to be a pdf", "not a PDF"),
    ("empty.md", b"   \n\n", "empty"),
    ("image.png", b"\x89PNG\r\n", "unsupported"),
])
def test_unreadable_files_raise_with_reason(tmp_path, name, data, reason):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnreadableFile, match=reason):
        _extract(path)


def test_chunks_respect_size_sections_and_overlap():
    sentences = [f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(60)]
    blocks = [Block(" ".join(sentences[:40]), ["A"]), Block(" ".join(sentences[40:]), ["A", "B"]),
              Block("Short closing paragraph.", ["C"])]
    chunks = chunk_blocks("Doc", blocks, size=300, overlap=60)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert all(len(c.text) <= 301 for c in chunks)
    assert all(c.title == "Doc" for c in chunks)
    # no chunk mixes sections, and every sentence survives in order
    assert [c.heading_path for c in chunks][-1] == ["C"]
    section_a = [c for c in chunks if c.heading_path == ["A"]]
    assert len(section_a) > 3
    for previous, current in zip(section_a, section_a[1:]):
        head = current.text[:30]
        assert head in previous.text, "consecutive chunks of a section share overlap text"
    joined = " ".join(c.text for c in chunks)
    for sentence in sentences:
        assert sentence in joined


def test_chunk_hash_depends_on_heading_and_text_only():
    a = chunk_blocks("T", [Block("same words", ["H"])])[0]
    b = chunk_blocks("T", [Block("same words", ["H"])])[0]
    c = chunk_blocks("T", [Block("same words", ["Other"])])[0]
    assert a.text_hash == b.text_hash != c.text_hash
    assert a.index_text.splitlines() == ["T", "H", "same words"]


def test_utf16_text_and_raw_html_in_markdown(tmp_path):
    utf16 = tmp_path / "windows.txt"
    utf16.write_bytes("Notizen über Öffnungszeiten im Rathaus.".encode("utf-16"))
    assert _extract(utf16).blocks[0].text == "Notizen über Öffnungszeiten im Rathaus."
    md = tmp_path / "mixed.md"
    md.write_text("# Mixed\n\n<div class='note'><b>Hinweis:</b> geschlossen am Montag</div>\n\n"
                  "<script>alert('x')</script>\n\nNormal text.\n", encoding="utf-8")
    texts = [b.text for b in _extract(md).blocks]
    assert texts == ["Hinweis: geschlossen am Montag", "Normal text."]
