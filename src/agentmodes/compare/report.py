"""A comparison's summary per variant and its written forms: Markdown with a plot, CSV.

The summary is arithmetic over the rows' figures (which come from the events); nothing is
measured here. Tokens per step are pooled (all step calls of a variant's runs, divided by
their number), so a long run weighs as much as its steps, not as one question.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from .runner import RunRecord


def _mean(values: Sequence[float]) -> Optional[float]:
    return round(statistics.fmean(values), 4) if values else None


def _share(values: Sequence[Optional[bool]]) -> Optional[float]:
    known = [bool(v) for v in values if v is not None]
    return round(sum(known) / len(known), 4) if known else None


def summarize(rows: Sequence[dict], variants: Sequence[str]) -> list[dict[str, Any]]:
    """One summary per variant from the rows as `RunRecord.as_dict()` gives them (also as
    read back from a run log)."""
    out = []
    for variant in variants:
        mine = [r for r in rows if r["variant"] == variant]
        ok = [r for r in mine if not r.get("error")]
        steps = [c for r in ok for c in r.get("calls") or () if c["kind"] == "step"]

        def mean_of(key: str) -> Optional[float]:
            return _mean([float(r.get(key) or 0) for r in ok])

        row: dict[str, Any] = {
            "variant": variant, "questions": len(mine), "errors": len(mine) - len(ok),
            "iterations_per_question": mean_of("iterations"),
            "llm_calls_per_question": mean_of("llm_calls"),
            "prompt_tokens_per_question": mean_of("prompt_tokens"),
            "completion_tokens_per_question": mean_of("completion_tokens"),
            "tokens_per_question": mean_of("total_tokens"),
            "step_calls": len(steps),
            "prompt_tokens_per_step": _mean([c["prompt_tokens"] for c in steps]),
            "completion_tokens_per_step": _mean([c["completion_tokens"] for c in steps]),
            "wall_s_per_question": mean_of("wall_s"),
            "adaptive_exits": sum(bool(r.get("adaptive_exit")) for r in ok),
            "max_iterations_reached": sum(bool(r.get("max_iterations_reached")) for r in ok),
            "parse_errors": sum(int(r.get("parse_errors") or 0) for r in ok),
            "unproductive_actions": sum(int(r.get("unproductive_actions") or 0) for r in ok),
            "corrections": sum(int(r.get("corrections") or 0) for r in ok),
            "sources_cited_per_question": mean_of("sources_cited"),
            "reflection_rounds_per_question": mean_of("reflection_rounds")
            if "+" in variant else None,
        }
        for key in ("em", "gold_in_answer", "judge_grounded", "judge_complete"):
            values = [r.get(key) for r in ok if key in r]
            row[key] = _share(values) if values else None
        row["f1"] = _mean([float(r["f1"]) for r in ok if "f1" in r])
        row["correction_rate"] = round(row["corrections"] / row["unproductive_actions"], 4) \
            if row["unproductive_actions"] else None
        out.append(row)
    return out


# -- the columns every form of the report shows ------------------------------------------
@dataclass(frozen=True, slots=True)
class Col:
    key: str
    label: str
    fmt: Callable[[Any], str]


def _num(digits: int) -> Callable[[Any], str]:
    return lambda v: "-" if v is None else f"{v:,.{digits}f}" if digits else f"{v:,.0f}"


def _flag(v: Any) -> str:
    return "-" if v is None else "yes" if v else "no"


def _int(v: Any) -> str:
    return "-" if v is None else f"{int(v):,}"


SUMMARY_COLUMNS = [
    Col("questions", "questions", _int), Col("errors", "errors", _int),
    Col("iterations_per_question", "iterations/q", _num(2)),
    Col("llm_calls_per_question", "LLM calls/q", _num(2)),
    Col("prompt_tokens_per_question", "prompt tok/q", _num(0)),
    Col("completion_tokens_per_question", "completion tok/q", _num(0)),
    Col("prompt_tokens_per_step", "prompt tok/step", _num(0)),
    Col("completion_tokens_per_step", "completion tok/step", _num(1)),
    Col("wall_s_per_question", "time/q (s)", _num(2)),
    Col("adaptive_exits", "adaptive exits", _int),
    Col("parse_errors", "parse errors", _int),
    Col("sources_cited_per_question", "cited/q", _num(2)),
]
GOLD_COLUMNS = [Col("em", "EM", _num(3)), Col("f1", "F1", _num(3)),
                Col("gold_in_answer", "gold in answer", _num(3))]
JUDGE_COLUMNS = [Col("judge_grounded", "judge: grounded", _num(3)),
                 Col("judge_complete", "judge: complete", _num(3))]

RUN_COLUMNS = [
    Col("iterations", "iterations", _int), Col("llm_calls", "LLM calls", _int),
    Col("prompt_tokens", "prompt tok", _int), Col("completion_tokens", "completion tok", _int),
    Col("tokens_per_step", "tok/step", _num(0)), Col("wall_s", "time (s)", _num(2)),
    Col("adaptive_exit", "adaptive exit", _flag), Col("parse_errors", "parse errors", _int),
    Col("sources", "cited/found", str),
]
RUN_GOLD = [Col("em", "EM", _flag), Col("f1", "F1", _num(2)),
            Col("gold_in_answer", "gold in answer", _flag)]
RUN_JUDGE = [Col("judge_grounded", "judge: grounded", _flag),
             Col("judge_complete", "judge: complete", _flag)]


def quality_columns(records: Sequence[RunRecord], *, per_run: bool) -> list[Col]:
    gold = any("em" in r.scores for r in records)
    judged = any("judge_grounded" in r.scores for r in records)
    return quality_of(gold, judged, per_run=per_run)


def quality_of(gold: bool, judged: bool, *, per_run: bool) -> list[Col]:
    if per_run:
        return (RUN_GOLD if gold else []) + (RUN_JUDGE if judged else [])
    return (GOLD_COLUMNS if gold else []) + (JUDGE_COLUMNS if judged else [])


def run_cells(record: RunRecord, columns: Sequence[Col]) -> list[str]:
    row = {**record.figures.as_dict(), **record.scores,
           "sources": f"{record.figures.sources_cited}/{record.figures.sources_retrieved}"}
    if record.figures.error:
        return ["error"] + ["-"] * (len(columns) - 1)
    return [c.fmt(row.get(c.key)) for c in columns]


def ratio(value: Optional[float], base: Optional[float]) -> str:
    return f"{value / base:.2f}x" if value is not None and base else "-"


# -- Markdown ---------------------------------------------------------------------------
def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    esc = [[str(c).replace("|", "\\|").replace("\n", " ") for c in row] for row in rows]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
           ["| " + " | ".join(row) + " |" for row in esc]


def summary_lines(summary: Sequence[dict], columns: Sequence[Col]) -> list[str]:
    base = summary[0] if summary else {}
    head = ["variant"] + [c.label for c in columns] + [f"tokens vs {base.get('variant')}",
                                                       f"time vs {base.get('variant')}"]
    rows = [[s["variant"]] + [c.fmt(s.get(c.key)) for c in columns]
            + [ratio(s.get("tokens_per_question"), base.get("tokens_per_question")),
               ratio(s.get("wall_s_per_question"), base.get("wall_s_per_question"))]
            for s in summary]
    return _table(head, rows)


def markdown(records: Sequence[RunRecord], summary: Sequence[dict], meta: dict[str, Any],
             plot_name: Optional[str]) -> str:
    lines = ["# Modes compared", ""] + [f"- {k}: {v}" for k, v in meta.items()] + [""]
    if plot_name:
        lines += [f"![tokens, time and quality per mode]({plot_name})", ""]
    lines += ["## Summary per mode", ""]
    lines += summary_lines(summary, SUMMARY_COLUMNS + quality_columns(records, per_run=False))
    if any("judge_grounded" in r.scores for r in records):
        lines += ["", f"The judge columns are a model's judgement ({meta.get('judge')}), "
                      "not a measurement against gold answers."]
    lines += ["", "## Per question"]
    columns = RUN_COLUMNS + quality_columns(records, per_run=True)
    for index in sorted({r.question.index for r in records}):
        rows = [r for r in records if r.question.index == index]
        q = rows[0].question
        lines += ["", f"### {index}. {q.question}", ""]
        if q.answers:
            lines += [f"Gold: {' | '.join(q.answers)}", ""]
        lines += _table(["variant"] + [c.label for c in columns],
                        [[r.variant] + run_cells(r, columns) for r in rows])
        lines.append("")
        for r in rows:
            text = r.figures.error and f"(failed: {r.figures.error})" or r.figures.answer
            quoted = "\n".join("> " + line for line in (text.strip() or "(empty)").splitlines())
            lines += [f"**{r.variant}**", "", quoted, ""]
    return "\n".join(lines).rstrip() + "\n"


# -- CSV --------------------------------------------------------------------------------
CSV_FIELDS = ["question_index", "question_id", "question", "gold", "variant", "mode",
              "iterations", "llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens",
              "total_tokens", "prompt_tokens_per_step", "completion_tokens_per_step",
              "tokens_per_step", "step_tokens", "other_calls", "other_prompt_tokens",
              "other_completion_tokens", "wall_s", "adaptive_exit", "max_iterations_reached",
              "parse_errors", "repeated_actions", "actions", "unproductive_actions",
              "corrections", "sources_retrieved",
              "sources_cited", "stop_reason", "reflection_rounds", "reflection_stop", "em",
              "f1", "gold_in_answer", "judge_grounded", "judge_complete", "error", "answer", "model_answer"]


def csv_text(records: Sequence[RunRecord]) -> str:
    """One row per run; `step_tokens` lists each call as iteration:prompt+completion."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in records:
        row = r.as_dict()
        row["gold"] = " | ".join(r.question.answers)
        row["step_tokens"] = " ".join(f"{c.kind[0]}{c.iteration}:{c.prompt_tokens}+"
                                      f"{c.completion_tokens}" for c in r.figures.calls)
        writer.writerow(row)
    return out.getvalue()


# -- the plot -----------------------------------------------------------------------------
def plot(summary: Sequence[dict], path: Path, title: str) -> bool:
    """Tokens, time and quality per variant. False when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [s["variant"] for s in summary]
    quality = [(k, label) for k, label in (("em", "EM"), ("f1", "F1"),
                                           ("gold_in_answer", "gold in answer"),
                                           ("judge_grounded", "judge: grounded"),
                                           ("judge_complete", "judge: complete"))
               if any(s.get(k) is not None for s in summary)]
    panels = 4 if quality else 3
    fig, axes = plt.subplots(1, panels, figsize=(max(9.0, 1.2 * len(names) * panels), 3.8))
    tokens, per_step, time_axis = axes[0], axes[1], axes[2]
    prompt = [s.get("prompt_tokens_per_question") or 0 for s in summary]
    completion = [s.get("completion_tokens_per_question") or 0 for s in summary]
    tokens.bar(names, prompt, color="#4c72b0", label="prompt")
    bars = tokens.bar(names, completion, bottom=prompt, color="#dd8452", label="completion")
    tokens.bar_label(bars, labels=[f"{p + c:,.0f}" for p, c in zip(prompt, completion)])
    tokens.set_title("tokens per question")
    tokens.legend(fontsize=8)
    bars = per_step.bar(names, [s.get("completion_tokens_per_step") or 0 for s in summary],
                        color="#dd8452")
    per_step.bar_label(bars, fmt="%.0f")
    per_step.set_title("completion tokens per step")
    bars = time_axis.bar(names, [s.get("wall_s_per_question") or 0 for s in summary],
                         color="#55a868")
    time_axis.bar_label(bars, fmt="%.1f")
    time_axis.set_title("seconds per question")
    if quality:
        axis, width = axes[3], 0.8 / len(quality)
        for i, (key, label) in enumerate(quality):
            xs = [n + (i - (len(quality) - 1) / 2) * width for n in range(len(names))]
            axis.bar(xs, [s.get(key) or 0 for s in summary], width=width, label=label)
        axis.set_xticks(range(len(names)), names)
        axis.set_ylim(0, 1.05)
        axis.set_title("quality (share of questions)")
        axis.legend(fontsize=7)
    for axis in axes:
        axis.tick_params(axis="x", rotation=30)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- the files ----------------------------------------------------------------------------
def write_files(out_dir: Path, records: Sequence[RunRecord], summary: Sequence[dict],
                meta: dict[str, Any], stem: str = "compare") -> dict[str, Path]:
    """<stem>.md (with <stem>.png beside it), <stem>.csv, <stem>.jsonl (the rows as
    --json prints them) and <stem>.events.jsonl (every run's events, tagged with its
    question and variant: what the figures were added up from)."""
    import json

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"md": out_dir / f"{stem}.md", "csv": out_dir / f"{stem}.csv",
             "jsonl": out_dir / f"{stem}.jsonl", "events": out_dir / f"{stem}.events.jsonl"}
    png = out_dir / f"{stem}.png"
    if plot(summary, png, f"{meta.get('questions', '')} question(s), {meta.get('llm', '')}"):
        paths["png"] = png
    paths["md"].write_text(markdown(records, summary, meta,
                                    png.name if "png" in paths else None), encoding="utf-8")
    paths["csv"].write_text(csv_text(records), encoding="utf-8")

    def lines(rows: Any) -> str:
        return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)

    paths["jsonl"].write_text(lines([{"type": "run", **r.as_dict()} for r in records]
                                    + [{"type": "summary", **s} for s in summary]),
                              encoding="utf-8")
    paths["events"].write_text(lines({"question_index": r.question.index,
                                      "variant": r.variant, **e}
                                     for r in records for e in r.events), encoding="utf-8")
    return paths
