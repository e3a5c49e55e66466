"""Rendering of retrieval benchmark results: rich tables, retrieval.json, retrieval.md."""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..rich_tables import print_table
from .results import write_results

BASELINE = "bm25s+stem"
QUALITY = ("ndcg@10", "recall@5", "recall@10", "mrr@10")
HEADERS = ["system", "nDCG@10", "R@5", "R@10", "MRR@10", "build s", "p50 ms", "p95 ms",
           "peak MB", "nDCG / bm25s", "p50 / bm25s"]


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def system_rows(dataset: dict) -> list[list[str]]:
    base = next((r for r in dataset["systems"] if r["system"] == BASELINE), None)
    out = []
    for row in dataset["systems"]:
        ratio_q = row["ndcg@10"] / base["ndcg@10"] if base and base["ndcg@10"] else None
        ratio_t = row["p50_ms"] / base["p50_ms"] if base and base["p50_ms"] else None
        out.append([row["system"], *(_fmt(row[m]) for m in QUALITY),
                    _fmt(row["build_s"]), _fmt(row["p50_ms"]), _fmt(row["p95_ms"]),
                    _fmt(row["peak_mb"], 1), _fmt(ratio_q), _fmt(ratio_t, 2)])
    return out


def ablation_rows(ablation: dict, names: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["variant", "parameters", "dev mean"] + [f"{n} test" for n in names] + \
        [f"{n} all" for n in names]
    rows = [[r["variant"], r["params"], _fmt(r["dev mean"]),
             *(_fmt(r[f"{n}/test"]) for n in names), *(_fmt(r[f"{n}/all"]) for n in names)]
            for r in ablation["rows"]]
    return headers, rows


def confidence_rows(figures: list[dict]) -> tuple[list[str], list[list[str]]]:
    headers = ["dataset", "mode", "split", "threshold", "precision@thr", "coverage",
               "top-1 relevant", "Brier (top-1)"]
    rows = [[f["dataset"], f["mode"], f["split"], _fmt(f["threshold"], 2),
             _fmt(f["precision"]), _fmt(f["coverage"]), _fmt(f["top1_relevant"]),
             _fmt(f["brier_top1"])] for f in figures]
    return headers, rows


def precision_floor(figures: list[dict], target: float = 0.9) -> str:
    """One line saying whether held-out precision at the threshold held on every set."""
    cells = [f for f in figures if f["split"] != "all" and "/" not in f["mode"]]
    if not cells:
        return "No held-out figures in this run (model not refitted)."
    low = [f"{f['dataset']} {f['mode']} {f['split']} {_fmt(f['precision'])}" for f in cells
           if f["precision"] is not None and f["precision"] < target]
    if low:
        return f"Held-out precision BELOW {target} in: " + ", ".join(low) + "."
    return (f"Held-out and nested precision at the threshold >= {target} on every set in "
            "every mode.")


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def backend_rows(results: dict) -> tuple[list[str], list[list[str]]]:
    """nDCG@10 and p50 of each mode through each backend's KB, side by side per set."""
    backends = results.get("backends") or []
    headers = ["set", "mode", "in memory"] + [f"{b} KB" for b in backends]
    if {"sqlite", "postgresql"} <= set(backends):
        headers.append("postgresql - sqlite")
    headers += [f"p50 ms {b}" for b in backends]
    rows = []
    for ds in results["datasets"]:
        by_name = {row["system"]: row for row in ds["systems"]}
        for mode in ("lexical", "semantic", "hybrid"):
            if f"ours {mode}" not in by_name:
                continue
            found = [by_name.get(f"ours {mode} ({b})") for b in backends]
            row = [ds["dataset"], mode, _fmt(by_name[f"ours {mode}"]["ndcg@10"])]
            row += [_fmt(r["ndcg@10"]) if r else "-" for r in found]
            if "postgresql - sqlite" in headers:
                pg, lite = (by_name.get(f"ours {mode} ({b})") for b in ("postgresql", "sqlite"))
                row.append(f"{pg['ndcg@10'] - lite['ndcg@10']:+.4f}" if pg and lite else "-")
            row += [_fmt(r["p50_ms"]) if r else "-" for r in found]
            rows.append(row)
    return headers, rows


def _sections(results: dict) -> list[tuple[str, list[str], list[list[str]], str]]:
    sections = []
    for ds in results["datasets"]:
        note = (f"{ds['passages']} passages, {ds['queries']} queries, embedder {ds['embedder']}"
                f", query embedding p50 {_fmt(ds['query_embedding_p50_ms'], 1)} ms, machine load "
                f"average {_fmt(ds.get('load_avg_1min'), 1)} on 2 cores")
        sections.append((f"{ds['dataset']}", HEADERS, system_rows(ds), note))
    if results.get("backends"):
        headers, rows = backend_rows(results)
        sections.append(("storage backends (nDCG@10)", headers, rows,
                         "the same corpus stored as a real KB through each backend's write "
                         "path and searched through its index (`--backends`); in memory = "
                         "the Searcher the SQLite KB loads, built from the passages directly"))
    names = [ds["dataset"] for ds in results["datasets"]]
    headers, rows = ablation_rows(results["ablation"], names)
    best = results["ablation"]["best_on_dev"]
    sections.append(("fusion ablation (nDCG@10)", headers, rows,
                     "dev = even-numbered queries, test = odd-numbered; one setting for all "
                     f"sets. Best on dev: {best['variant']} ({best['params']}); ours hybrid "
                     f"ships z-score + feedback ({results['ablation']['default']})"))
    figures = results["confidence"]["figures"]
    headers, rows = confidence_rows(figures)
    sections.append(("confidence calibration", headers, rows,
                     f"HIGH_CONFIDENCE = {results['confidence']['high_confidence']}: the top hit "
                     "counts as confident at or above it; precision = share of confident top "
                     "hits that are relevant; coverage = share of queries that are confident. "
                     "Cranfield counts each question's source paper (cranqrel code -1) as "
                     "relevant (bench/calibration.py says why). " + precision_floor(figures)))
    return sections


def print_tables(results: dict, console: Console | None = None) -> None:
    print_sections(_sections(results), console)


def print_sections(sections: list[tuple[str, list[str], list[list[str]], str]],
                   console: Console | None = None) -> None:
    """(title, headers, rows, caption) sections as rich tables (also bench scale's)."""
    console = console or Console()
    for title, headers, rows, note in sections:
        table = Table(title=title, caption=note)
        for header in headers:
            table.add_column(header)
        for row in rows:
            table.add_row(*row)
        print_table(table, console)


def write_reports(results: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = dict(results, measured=stamp, machine=f"{platform.machine()}, "
                   f"{platform.python_implementation()} {platform.python_version()}")
    parts = [f"# Retrieval benchmark\n\nMeasured {stamp} by `agentmodes bench retrieval`. "
             f"{results['memory_note']}; {results['latency_note']}. Data: ../shared/data "
             "(HotpotQA CC BY-SA 4.0, XQuAD CC BY-SA 4.0, Cranfield public research "
             "collection).\n"]
    for title, headers, rows, note in _sections(results):
        parts.append(f"## {title}\n\n{note}\n\n{markdown_table(headers, rows)}\n")
    return write_results(out_dir, "retrieval", results, "\n".join(parts))
