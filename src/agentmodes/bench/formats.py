"""`agentmodes bench formats`: our format readers against markitdown, on the same files.

Both paths end in the same chunker, so the comparison is of what each reader hands it:
ours (knowledge/formats/: python-docx, python-pptx, openpyxl, EbookLib, csv) against
markitdown (file -> Markdown -> our Markdown reader). The files are real files written by
the libraries people write them with (bench/format_samples.py). Per format:
- facts kept: known facts whose words all sit in one chunk;
- in their section: ... and that chunk's heading path names the section the fact is under
  (what a citation shows: "Preise", "Slide 2: Standorte", the sheet);
- noise chunks: chunks holding markup or metadata rather than content (slide-number
  comments, EPUB navigation, empty table headers).
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from ..knowledge.chunking import chunk_blocks
from .format_samples import MAKERS
from .results import results_dir, write_results

# (words that must share one chunk, the section the fact belongs to)
FACTS: dict[str, list[tuple[list[str], str]]] = {
    ".docx": [(["Montag bis Freitag", "9 bis 18 Uhr"], "Öffnungszeiten"),
              (["Samstags", "Vereinbarung"], "Öffnungszeiten"),
              (["Website", "ab 4.900 Euro", "Preis"], "Preise"),
              (["Zwölf Menschen"], "Team")],
    ".pptx": [(["Umsatz stieg um 14 Prozent"], "Quartalsbericht Q3"),
              (["größte Kunde", "Fürth"], "Quartalsbericht Q3"),
              (["Erlangen", "3", "Mitarbeitende"], "Standorte")],
    ".xlsx": [(["App", "12000", "Preis (Euro)"], "Preise"),
              (["Jonas Weber", "Entwickler", "Rolle"], "Team")],
    ".epub": [(["2014", "Daniela Graf"], "Anfänge"),
              (["kostenlosen Erstgespräch"], "Arbeitsweise")],
    ".csv": [(["Fürth", "Di und Do 10-16 Uhr", "Öffnungszeiten"], "sample"),   # file stem
             (["Nürnberg", "12", "Mitarbeitende"], "sample")],
}
NOISE = re.compile(r"<!--|Slide number|\.xhtml|(^|\n)(Title|Identifier|Language): |^\s*\|?\s*\|")


def ours(path: Path) -> tuple[str, list]:
    from ..knowledge.extract import extract
    result = extract(path, path.read_bytes())
    return result.title, result.blocks


def markitdown(path: Path) -> tuple[str, list]:
    from markitdown import MarkItDown

    from ..knowledge.extract import _extract_markdown
    text = MarkItDown().convert(str(path)).text_content
    result = _extract_markdown(path, text)
    return result.title, [b for b in result.blocks if b.text.strip()]


SYSTEMS: dict[str, Callable[[Path], tuple[str, list]]] = {"ours": ours, "markitdown": markitdown}


def score(chunks: list, facts: list[tuple[list[str], str]]) -> dict[str, Any]:
    kept = placed = 0
    for words, section in facts:
        holding = [c for c in chunks if all(w in c.text for w in words)]
        kept += bool(holding)
        placed += any(any(section in h for h in c.heading_path) or section in c.title
                      for c in holding)
    return {"facts": len(facts), "kept": kept, "in_section": placed,
            "noise_chunks": sum(bool(NOISE.search(c.text)) for c in chunks),
            "chunks": len(chunks)}


def run_formats(out_dir: Any = None) -> tuple[dict, str]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, make in MAKERS.items():
            path = make(Path(tmp) / f"sample{suffix}")
            for name, read in SYSTEMS.items():
                started = time.perf_counter()
                try:
                    title, blocks = read(path)
                    chunks = chunk_blocks(title, blocks, 1200, 150)
                    row = {"format": suffix[1:], "reader": name, **score(chunks, FACTS[suffix])}
                except Exception as err:  # noqa: BLE001 - a reader that fails is a result
                    row = {"format": suffix[1:], "reader": name, "facts": len(FACTS[suffix]),
                           "kept": 0, "in_section": 0, "noise_chunks": 0, "chunks": 0,
                           "error": f"{type(err).__name__}: {err}"[:200]}
                row["ms"] = round((time.perf_counter() - started) * 1000, 1)
                rows.append(row)
    report = {"rows": rows, "totals": {name: {
        key: sum(r[key] for r in rows if r["reader"] == name)
        for key in ("facts", "kept", "in_section", "noise_chunks", "chunks")} for name in SYSTEMS}}
    md = markdown(report)
    write_results(results_dir(out_dir), "formats", report, md)
    return report, md


def markdown(report: dict) -> str:
    lines = ["# Format readers: ours vs markitdown", "",
             "Same files (bench/format_samples.py), same chunker (1200/150). kept = facts whose "
             "words share one chunk; in section = and the chunk's heading path names the "
             "fact's section; noise = chunks of markup or metadata. Time is the first call "
             "(imports included) on a shared machine.", "",
             "| format | reader | kept | in section | noise chunks | chunks | ms |",
             "|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['format']} | {r['reader']} | {r['kept']}/{r['facts']} | "
                     f"{r['in_section']}/{r['facts']} | {r['noise_chunks']} | {r['chunks']} | "
                     f"{r['ms']} |" + (f" {r['error']}" if r.get("error") else ""))
    lines.append("")
    for name, t in report["totals"].items():
        lines.append(f"- {name}: {t['kept']}/{t['facts']} facts kept, {t['in_section']}/"
                     f"{t['facts']} in their section, {t['noise_chunks']} noise chunks")
    return "\n".join(lines) + "\n"
