"""How `agentmodes compare` looks in a terminal: progress on stderr, then on stdout a table
per question (its answers below it, whole) and the summary per mode. Tables are printed at
their natural width (rich_tables.py): a name or a number is never cut."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from ..compare.report import (RUN_COLUMNS, SUMMARY_COLUMNS, quality_columns, ratio,
                              run_cells)
from ..rich_tables import print_table


class CompareView:
    def __init__(self, quiet: bool = False) -> None:
        self.err = Console(stderr=True, highlight=False, quiet=quiet)
        self.out = Console(highlight=False, soft_wrap=True)
        self.progress: Optional[Progress] = None
        self.task: Any = None

    def note(self, text: str) -> None:
        self.err.print(f"[dim]{text}[/]", highlight=False)

    def start(self, meta: dict, runs: int) -> None:
        self.note(f"{meta['questions']} question(s) × {meta['variants']} · {meta['llm']} · "
                  f"{meta['runs']}")
        self.progress = Progress("[progress.description]{task.description}", BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=self.err,
                                 disable=self.err.quiet, transient=True)
        self.task = self.progress.add_task("comparing", total=runs)
        self.progress.start()

    def advance(self, record: Any) -> None:
        if self.progress is not None and "+" not in record.variant:
            self.progress.update(self.task, advance=1,
                                 description=f"q{record.question.index} {record.variant}")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def show(self, records: Sequence[Any], summary: Sequence[dict], meta: dict) -> None:
        columns = RUN_COLUMNS + quality_columns(records, per_run=True)
        for index in sorted({r.question.index for r in records}):
            rows = [r for r in records if r.question.index == index]
            q = rows[0].question
            table = Table(title=f"{index}. {q.question}", title_justify="left",
                          caption=f"gold: {' | '.join(q.answers)}" if q.answers else None,
                          caption_justify="left")
            table.add_column("variant", no_wrap=True)
            for c in columns:
                table.add_column(c.label, justify="right", no_wrap=True)
            for r in rows:
                table.add_row(r.variant, *run_cells(r, columns))
            print_table(table, self.out)
            for r in rows:
                text = f"(failed: {r.figures.error})" if r.figures.error else r.figures.answer
                self.out.print(f"[bold]{r.variant}[/]: ", end="")
                self.out.print(text.strip() or "(empty)", markup=False)
            self.out.print()
        self._summary(records, summary, meta)

    def _summary(self, records: Sequence[Any], summary: Sequence[dict], meta: dict) -> None:
        columns = SUMMARY_COLUMNS + quality_columns(records, per_run=False)
        base = summary[0] if summary else {}
        table = Table(title=f"Summary per mode ({meta['questions']} question(s), {meta['llm']})",
                      title_justify="left")
        table.add_column("variant", no_wrap=True)
        for c in columns:
            table.add_column(c.label, justify="right", no_wrap=True)
        table.add_column(f"tokens vs {base.get('variant')}", justify="right", no_wrap=True)
        for s in summary:
            table.add_row(s["variant"], *[c.fmt(s.get(c.key)) for c in columns],
                          ratio(s.get("tokens_per_question"), base.get("tokens_per_question")))
        print_table(table, self.out)
        if meta.get("judge", "none") != "none":
            self.out.print(f"judge columns: {meta['judge']}, not a gold score", markup=False)

    def files(self, paths: dict) -> None:
        for kind, path in paths.items():
            self.note(f"{kind}: {path}")
