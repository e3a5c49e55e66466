"""Benchmark reports: a summary per variant, written as JSON, a Markdown table and a PNG.

Variants (strategies or modes) are compared side by side in one run; the Markdown table
also gives each variant's accuracy and cost as a ratio to the first (baseline) variant, so
"reflexion costs 3.1x the tokens of simple for +4 points" reads straight off the table.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from rich.console import Console
from rich.table import Table

from ..rich_tables import print_table as print_table_whole
from .results import write_results


@dataclass(slots=True)
class Column:
    key: str             # key in the summary row
    label: str
    fmt: str = "{:.3f}"


@dataclass(slots=True)
class Report:
    benchmark: str
    metric: str                        # the headline accuracy key ("pass_at_1", "em")
    columns: list[Column]
    rows: list[dict[str, Any]]         # one summary per variant, baseline first
    meta: dict[str, Any] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)   # per-task records
    # Published results to read ours against (the paper's row), with where they come from;
    # a separate table, never mixed with what this run measured.
    reference: list[dict[str, Any]] = field(default_factory=list)
    reference_source: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = {"benchmark": self.benchmark, "metric": self.metric, "meta": self.meta,
               "summary": self.rows, "tasks": self.tasks}
        if self.reference:
            out["published"] = {"source": self.reference_source, "rows": self.reference}
        return out


def mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def ratio(value: float, base: float) -> str:
    if not base:
        return "-"
    return f"{value / base:.2f}x"


def cell(column: Column, value: Any) -> str:
    """A table cell; None means "does not apply to this variant"."""
    return "-" if value is None else column.fmt.format(value)


def markdown(report: Report) -> str:
    head = ["variant"] + [c.label for c in report.columns] + [
        f"{report.metric} vs {report.rows[0]['variant']}", "tokens vs base", "time vs base"]
    lines = [f"# {report.benchmark}", ""]
    for key, value in report.meta.items():
        lines.append(f"- {key}: {value}")
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = report.rows[0] if report.rows else {}
    for row in report.rows:
        cells = [row["variant"]] + [cell(c, row.get(c.key, 0)) for c in report.columns]
        cells += [ratio(row.get(report.metric, 0), base.get(report.metric, 0)),
                  ratio(row.get("tokens_per_task", 0), base.get("tokens_per_task", 0)),
                  ratio(row.get("time_per_task_s", 0), base.get("time_per_task_s", 0))]
        lines.append("| " + " | ".join(cells) + " |")
    if report.reference:
        lines += ["", f"Published ({report.reference_source}):", "",
                  f"| variant | {report.metric} |", "|---|---|"]
        lines += [f"| {r['variant']} | {r[report.metric]:.2f} |" for r in report.reference]
    return "\n".join(lines) + "\n"


def plot(report: Report, path: Path) -> bool:
    """Accuracy and tokens per task for each variant, side by side. Returns False when
    matplotlib (the bench extra) is not installed: the JSON and Markdown still exist."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [r["variant"] for r in report.rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(6, 1.6 * len(names) + 3), 3.6))
    bars = left.bar(names, [r.get(report.metric, 0) for r in report.rows], color="#4c72b0")
    left.bar_label(bars, fmt="%.2f")          # a zero bar is invisible without its label
    left.set_title(report.metric)
    left.set_ylim(0, 1.1)
    bars = right.bar(names, [r.get("tokens_per_task", 0) for r in report.rows], color="#dd8452")
    right.bar_label(bars, fmt="%.0f")
    right.set_title("tokens per task")
    for axis in (left, right):
        axis.tick_params(axis="x", rotation=30)
    fig.suptitle(f"{report.benchmark} ({report.meta.get('llm', '')}, n={report.meta.get('tasks', '')})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(report: Report, out_dir: Path, stem: str, *,
          render: Callable[[Report], str] = markdown,
          draw: Callable[[Report, Path], bool] = plot,
          extra: Optional[dict[str, Any]] = None) -> dict[str, Path]:
    """JSON, Markdown and PNG of a report; a benchmark with its own tables or figure passes
    `render`/`draw`, and `extra` adds top-level keys to the JSON (e.g. published figures)."""
    report.meta.setdefault("written", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    json_path, md_path = write_results(out_dir, stem, {**report.as_dict(), **(extra or {})},
                                       render(report))
    paths = {"json": json_path, "md": md_path}
    png = Path(out_dir) / f"{stem}.png"
    if draw(report, png):
        paths["png"] = png
    return paths


def print_table(report: Report, console: Console | None = None) -> None:
    table = Table(title=f"{report.benchmark} ({report.meta.get('llm', '')})")
    table.add_column("variant")
    for c in report.columns:
        table.add_column(c.label, justify="right")
    for row in report.rows:
        table.add_row(row["variant"], *[cell(c, row.get(c.key, 0)) for c in report.columns])
    print_table_whole(table, console)
    if report.reference:
        published = Table(title="published")
        published.add_column("variant")
        published.add_column(report.metric, justify="right")
        for row in report.reference:
            published.add_row(row["variant"], f"{row[report.metric]:.2f}")
        print_table_whole(published, console)
        (console or Console()).print(f"source: {report.reference_source}", markup=False,
                                     highlight=False)


COST_COLUMNS = [
    Column("tasks", "tasks", "{}"),
    Column("errors", "errors", "{}"),
    Column("llm_calls_per_task", "LLM calls/task", "{:.1f}"),
    Column("tokens_per_task", "tokens/task", "{:.0f}"),
    Column("iterations_per_task", "iterations/task", "{:.2f}"),
    Column("time_per_task_s", "time/task (s)", "{:.1f}"),
]


def cost_summary(records: list[dict]) -> dict[str, Any]:
    """The cost part of a variant's summary (shared by every LLM benchmark)."""
    ok = [r for r in records if not r.get("error")]
    return {"tasks": len(records), "errors": len(records) - len(ok),
            "llm_calls_per_task": mean([r.get("llm_calls", 0) for r in ok]),
            "tokens_per_task": mean([r.get("prompt_tokens", 0) + r.get("completion_tokens", 0)
                                     for r in ok]),
            "iterations_per_task": mean([r.get("iterations", 0) for r in ok]),
            "time_per_task_s": mean([r.get("time_s", 0) for r in ok])}
