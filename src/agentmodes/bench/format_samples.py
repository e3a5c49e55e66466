"""Real office, e-book and table files made with the libraries people write them with
(python-docx, python-pptx, openpyxl, EbookLib), for the format readers' tests and the
format benchmark. Every file holds the same facts in the format's own structure."""

from __future__ import annotations

from pathlib import Path


def make_docx(path: Path) -> Path:
    from docx import Document

    doc = Document()
    doc.core_properties.title = "Handbuch der DG Agentur"
    doc.add_heading("DG Agentur", level=1)
    doc.add_paragraph("Die DG Agentur entwickelt Websites und Apps in Nürnberg.")
    doc.add_heading("Öffnungszeiten", level=2)
    doc.add_paragraph("Wir sind Montag bis Freitag von 9 bis 18 Uhr für Sie da.")
    doc.add_paragraph("Samstags nur nach Vereinbarung.", style="List Bullet")
    doc.add_heading("Preise", level=2)
    table = doc.add_table(rows=3, cols=2)
    for row, (service, price) in zip(table.rows, [("Leistung", "Preis"),
                                                   ("Website", "ab 4.900 Euro"),
                                                   ("App", "ab 12.000 Euro")]):
        row.cells[0].text, row.cells[1].text = service, price
    doc.add_heading("Team", level=1)
    doc.add_paragraph("Zwölf Menschen arbeiten im Büro gegenüber dem Hauptbahnhof.")
    doc.save(path)
    return path


def make_pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quartalsbericht Q3"
    first.placeholders[1].text_frame.text = "Umsatz stieg um 14 Prozent."
    first.notes_slide.notes_text_frame.text = "Der größte Kunde war die Stadt Fürth."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Standorte"
    shape = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5))
    for r, (city, staff) in enumerate([("Stadt", "Mitarbeitende"), ("Nürnberg", "12"),
                                       ("Erlangen", "3")]):
        shape.table.cell(r, 0).text, shape.table.cell(r, 1).text = city, staff
    deck.save(path)
    return path


def make_xlsx(path: Path) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Preise"
    for row in [("Leistung", "Preis (Euro)", "Dauer (Wochen)"), ("Website", 4900, 6),
                ("App", 12000, 16)]:
        sheet.append(row)
    staff = book.create_sheet("Team")
    for row in [("Name", "Rolle"), ("Daniela Graf", "Gründerin"), ("Jonas Weber", "Entwickler")]:
        staff.append(row)
    book.save(path)
    return path


def make_epub(path: Path) -> Path:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("dg-agentur-handbuch")
    book.set_title("Das kleine Handbuch")
    book.set_language("de")
    chapters = []
    for n, (heading, body) in enumerate([
            ("Anfänge", "Die Agentur wurde 2014 von Daniela Graf gegründet."),
            ("Arbeitsweise", "Jedes Projekt beginnt mit einem kostenlosen Erstgespräch.")], 1):
        chapter = epub.EpubHtml(title=heading, file_name=f"chap_{n}.xhtml", lang="de")
        chapter.content = f"<h1>{heading}</h1><p>{body}</p>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.spine = ["nav", *chapters]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    epub.write_epub(str(path), book)
    return path


def make_csv(path: Path, encoding: str = "cp1252") -> Path:
    path.write_bytes("Stadt;Mitarbeitende;Öffnungszeiten\nNürnberg;12;Mo-Fr 9-18 Uhr\n"
                     "Fürth;3;Di und Do 10-16 Uhr\n".encode(encoding))
    return path


MAKERS = {".docx": make_docx, ".pptx": make_pptx, ".xlsx": make_xlsx, ".epub": make_epub,
          ".csv": make_csv}
