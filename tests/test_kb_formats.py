"""Word, PowerPoint, Excel, EPUB and CSV files, made by the libraries that write them, read
into blocks that keep their structure (headings, slides, sheets, column names), and found
by a search through the real ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmodes.knowledge.extract import UnreadableFile, content_problem, extract
from agentmodes.bench.format_samples import MAKERS, make_csv, make_docx, make_epub, make_pptx, make_xlsx


def blocks(path: Path) -> list[tuple[str, list[str]]]:
    return [(b.text, b.heading_path) for b in extract(path, path.read_bytes()).blocks]


def test_docx_headings_lists_and_tables(tmp_path):
    path = make_docx(tmp_path / "handbuch.docx")
    result = extract(path, path.read_bytes())
    assert result.title == "Handbuch der DG Agentur"
    found = blocks(path)
    assert ("Wir sind Montag bis Freitag von 9 bis 18 Uhr für Sie da.",
            ["DG Agentur", "Öffnungszeiten"]) in found
    assert ("- Samstags nur nach Vereinbarung.", ["DG Agentur", "Öffnungszeiten"]) in found
    assert ("Leistung: Website; Preis: ab 4.900 Euro", ["DG Agentur", "Preise"]) in found
    assert ("Zwölf Menschen arbeiten im Büro gegenüber dem Hauptbahnhof.", ["Team"]) in found


def test_pptx_slides_tables_and_notes(tmp_path):
    path = make_pptx(tmp_path / "bericht.pptx")
    assert extract(path, path.read_bytes()).title == "Quartalsbericht Q3"
    found = blocks(path)
    assert ("Umsatz stieg um 14 Prozent.", ["Slide 1: Quartalsbericht Q3"]) in found
    assert ("Notes: Der größte Kunde war die Stadt Fürth.",
            ["Slide 1: Quartalsbericht Q3"]) in found
    assert ("Stadt: Nürnberg; Mitarbeitende: 12", ["Slide 2: Standorte"]) in found


def test_xlsx_one_section_per_sheet_rows_with_their_header(tmp_path):
    found = blocks(make_xlsx(tmp_path / "preise.xlsx"))
    assert ("Leistung: App; Preis (Euro): 12000; Dauer (Wochen): 16", ["Preise"]) in found
    assert ("Name: Daniela Graf; Rolle: Gründerin", ["Team"]) in found


def test_epub_chapters_in_reading_order(tmp_path):
    path = make_epub(tmp_path / "handbuch.epub")
    result = extract(path, path.read_bytes())
    assert result.title == "Das kleine Handbuch"
    texts = [b.text for b in result.blocks]
    first = texts.index("Die Agentur wurde 2014 von Daniela Graf gegründet.")
    second = texts.index("Jedes Projekt beginnt mit einem kostenlosen Erstgespräch.")
    assert first < second
    assert result.blocks[first].heading_path == ["Anfänge"]


@pytest.mark.parametrize("encoding", ["cp1252", "utf-8", "utf-16"])
def test_csv_in_any_encoding_with_a_sniffed_delimiter(tmp_path, encoding):
    found = blocks(make_csv(tmp_path / "standorte.csv", encoding))
    assert ("Stadt: Fürth; Mitarbeitende: 3; Öffnungszeiten: Di und Do 10-16 Uhr",
            ["standorte"]) in found


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx", ".epub"])
def test_damaged_or_fake_files_are_skipped_with_a_reason(tmp_path, suffix):
    fake = tmp_path / f"fake{suffix}"
    fake.write_text("just text pretending to be an office file")
    with pytest.raises(UnreadableFile, match="no zip container"):
        extract(fake, fake.read_bytes())
    real = MAKERS[suffix](tmp_path / f"real{suffix}").read_bytes()
    broken = tmp_path / f"broken{suffix}"
    broken.write_bytes(real[: len(real) // 2])               # cut off mid-archive
    with pytest.raises(UnreadableFile, match="damaged"):
        extract(broken, broken.read_bytes())


def test_upload_content_check_uses_the_readers_rules(tmp_path):
    assert content_problem(".docx", make_docx(tmp_path / "a.docx").read_bytes()[:64]) is None
    assert content_problem(".docx", b"%PDF-1.7") == "content is not a DOCX file"
    assert content_problem(".txt", "Grüße aus Nürnberg".encode("cp1252")) is None   # not UTF-8
    assert content_problem(".txt", "Grüße".encode("utf-16")) is None
    assert content_problem(".md", bytes(range(32)) * 4) == "binary content in a text file type"


def test_ingest_and_search_every_format(tmp_path):
    from agentmodes.knowledge.base import KnowledgeBase

    folder = tmp_path / "docs"
    folder.mkdir()
    for suffix, make in MAKERS.items():
        make(folder / f"file{suffix}")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        report = kb.ingest(folder, embed=False)
        assert len(report.added) == 5 and not report.skipped, report.skipped
        for query, name in [("Preis Website 4.900", "file.docx"),
                            ("größte Kunde Fürth", "file.pptx"),
                            ("Jonas Weber Entwickler", "file.xlsx"),
                            ("kostenlosen Erstgespräch", "file.epub"),
                            ("Fürth Di und Do", "file.csv")]:
            hit = kb.search(query, mode="lexical", k=1)[0]
            assert Path(hit.source).name == name, (query, hit.source)


def test_formats_benchmark_writes_its_comparison(tmp_path):
    pytest.importorskip("markitdown")
    from agentmodes.bench.formats import run_formats

    report, table = run_formats(tmp_path)
    assert (tmp_path / "formats.json").is_file() and (tmp_path / "formats.md").read_text() == table
    readers = {(r["format"], r["reader"]) for r in report["rows"]}
    assert readers == {(f, r) for f in ("docx", "pptx", "xlsx", "epub", "csv")
                       for r in ("ours", "markitdown")}
    ours = report["totals"]["ours"]
    assert ours["kept"] == ours["in_section"] == ours["facts"] and ours["noise_chunks"] == 0
