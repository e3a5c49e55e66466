"""The ALFWorld report: success per task type and overall, steps, cost, Reflexion's success by
trial, the papers' own figures beside ours, and what a full run costs.

Published figures are quoted, never re-measured, each with its source and model:
- ReAct paper (Yao et al., ICLR 2023), Table 3, PaLM-540B, the 134 games: Act and ReAct
  (best of 6 prompt pairs, and ReAct's average);
- the ReAct repository README (ysymyth/ReAct): ReAct with GPT-3 text-davinci-002, 78.4%;
- Reflexion paper (Shinn et al., NeurIPS 2023), ALFWorld section and seed 004: ReAct +
  Reflexion with the heuristic evaluator solves 130 of the 134 games within 12 trials
  (97%), 22 points above ReAct alone; text-davinci-003 (the model its ALFWorld code calls);
- ReflAct paper (Kim et al., EMNLP 2025), abstract: 93.3% on ALFWorld, "surpasses ReAct by
  27.7% on average". Its per-backbone table was not available where this was written, so
  only the headline figure is listed (the abstract does not name the model behind it).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..environments.alfworld_data import TYPE_NAMES, TYPE_TITLES, Game
from .llm_report import COST_COLUMNS, Column, Report, cost_summary, mean, write
from .runs import resumed_note

STANDARD_GAMES = 134


@dataclass(frozen=True, slots=True)
class Published:
    source: str
    model: str
    method: str
    overall: float                                   # success rate, %
    by_type: dict[str, float] = field(default_factory=dict)
    compares_to: str = ""                            # our variant it corresponds to
    note: str = ""


_REACT = "ReAct paper (Yao et al., ICLR 2023), Table 3"
PUBLISHED = (
    Published(_REACT, "PaLM-540B", "Act, best of 6 prompt pairs", 45,
              dict(zip(TYPE_NAMES, (88, 42, 74, 67, 72, 41))), "act"),
    Published(_REACT, "PaLM-540B", "ReAct, average of 6 prompt pairs", 57,
              dict(zip(TYPE_NAMES, (65, 39, 83, 76, 55, 24))), "react"),
    Published(_REACT, "PaLM-540B", "ReAct, best of 6 prompt pairs", 71,
              dict(zip(TYPE_NAMES, (92, 58, 96, 86, 78, 41))), "react"),
    Published("ReAct repository README (ysymyth/ReAct)", "GPT-3 text-davinci-002", "ReAct",
              78.4, compares_to="react"),
    Published("Reflexion paper (Shinn et al., NeurIPS 2023), ALFWorld; seed 004",
              "text-davinci-003", "ReAct + Reflexion, heuristic evaluator, 12 trials", 97.0,
              compares_to="react+reflexion", note="130 of 134 games; +22 points over ReAct alone"),
    Published("ReflAct paper (Kim et al., EMNLP 2025), abstract", "best backbone (not named "
              "in the abstract)", "ReflAct", 93.3, compares_to="reflact",
              note="the abstract: 'surpasses ReAct by 27.7% on average'"),
)


def _pct(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(100 * x, 1)


def _rate(values: Sequence[bool]) -> Optional[float]:
    return round(statistics.fmean(values), 4) if values else None


def _by_game(records: Sequence[dict], variant: str) -> dict[str, list[dict]]:
    """A variant's records per game, trials in order (one record per game without trials)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("variant") == variant:
            out[str(r.get("game") or r["task_id"].split("#")[0])].append(r)
    for trials in out.values():
        trials.sort(key=lambda r: r.get("trial", 0))
    return out


def _game_total(trials: list[dict]) -> dict:
    """One game's record summed over its trials (cost), won if any trial won."""
    ok = [t for t in trials if not t.get("error")]
    total = {k: sum(t.get(k, 0) or 0 for t in ok)
             for k in ("llm_calls", "prompt_tokens", "completion_tokens", "iterations",
                       "time_s", "env_steps")}
    won_at = next((t.get("trial", 1) for t in ok if t.get("won")), None)
    return {**total, "won": won_at is not None, "won_at": won_at, "trials": len(ok),
            "task_type": trials[0].get("task_type"),
            "error": trials[-1].get("error") if not ok else None}


def summarize(records: Sequence[dict], variants: Sequence[str], games: Sequence[Game],
              trials: int) -> list[dict]:
    rows = []
    types = {g.name: g.task_type for g in games}
    for variant in variants:
        per_game = {name: _game_total(rs) for name, rs in _by_game(records, variant).items()}
        for name, g in per_game.items():
            g["task_type"] = g.get("task_type") or types.get(name)
        ok = [g for g in per_game.values() if not g.get("error")]
        row: dict[str, Any] = {"variant": variant, "success": _rate([g["won"] for g in ok]) or 0.0}
        for t in TYPE_NAMES:
            row[t] = _rate([g["won"] for g in ok if g["task_type"] == t])
        row["steps_per_game"] = mean([g["env_steps"] for g in ok])
        row["trials_per_game"] = mean([g["trials"] for g in ok]) if "+" in variant else None
        if "+" in variant:
            row["solved_by_trial"] = [_rate([bool(g["won_at"] and g["won_at"] <= n) for g in ok])
                                      for n in range(1, trials + 1)]
        row.update(cost_summary(list(per_game.values())))
        calls = sum(g["llm_calls"] for g in ok)
        tokens = sum(g["prompt_tokens"] + g["completion_tokens"] for g in ok)
        row["tokens_per_call"] = round(tokens / calls, 1) if calls else 0.0
        rows.append(row)
    return rows


COLUMNS = ([Column("success", "success")] +
           [Column(t, TYPE_TITLES[t], "{:.2f}") for t in TYPE_NAMES] +
           [Column("steps_per_game", "commands/game", "{:.1f}"),
            Column("trials_per_game", "trials/game", "{:.2f}")] + COST_COLUMNS)


def build_report(records: Sequence[dict], variants: Sequence[str], games: Sequence[Game], *,
                 llm_label: str, trials: int, max_steps: int, show_admissible: bool) -> Report:
    rows = summarize(records, variants, games, trials)
    types = ", ".join(f"{TYPE_TITLES[t]} {sum(g.task_type == t for g in games)}"
                      for t in TYPE_NAMES if any(g.task_type == t for g in games))
    return Report(
        benchmark="alfworld", metric="success", columns=COLUMNS, rows=rows,
        meta={"llm": llm_label, "tasks": len(games),
              "games": f"{len(games)} of the {STANDARD_GAMES} solvable valid_unseen games "
                       f"({types}), round-robin over the task types",
              "variants": ", ".join(variants),
              "settings": f"at most {max_steps} commands per episode; the papers' two "
                          "few-shot trajectories per task type; Reflexion: up to "
                          f"{trials} trials, a trial ends when won, at the limit or when "
                          "seed 004's heuristic fires, k = 3 plans in memory"
                          + ("; admissible commands shown" if show_admissible else ""),
              "resumed": resumed_note(records)},
        tasks=[{k: r.get(k) for k in ("task_id", "variant", "task_type", "trial", "won",
                                        "outcome", "env_steps", "llm_calls", "prompt_tokens",
                                        "completion_tokens", "time_s", "log", "error")}
               for r in records])


def _cell(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def markdown(report: Report) -> str:
    lines = ["# ALFWorld", ""] + [f"- {k}: {v}" for k, v in report.meta.items()]
    head = ["variant"] + [c.label for c in report.columns]
    lines += ["", "## Measured here", "", "| " + " | ".join(head) + " |",
              "|" + "---|" * len(head)]
    for row in report.rows:
        lines.append("| " + " | ".join([row["variant"]] + [_cell(row.get(c.key), c.fmt)
                                                           for c in report.columns]) + " |")
    curves = [r for r in report.rows if r.get("solved_by_trial")]
    if curves:
        n = max(len(r["solved_by_trial"]) for r in curves)
        lines += ["", "## Reflexion: share of games solved by trial", "",
                  "| variant | " + " | ".join(f"trial {i}" for i in range(1, n + 1)) + " |",
                  "|" + "---|" * (n + 1)]
        for r in curves:
            lines.append(f"| {r['variant']} | " + " | ".join(_cell(v) for v in r["solved_by_trial"])
                         + " |")
    lines += ["", "## Side by side with the papers (their figures quoted, not re-measured)", "",
              "| our variant | ours: success | method in the paper | paper: success | "
              "paper's model | source | note |", "|---|---|---|---|---|---|---|"]
    ours = {r["variant"]: r for r in report.rows}
    for p in PUBLISHED:
        mine = ours.get(p.compares_to)
        lines.append(f"| {p.compares_to} | {_cell(_pct(mine['success']), '{:.1f}%') if mine else '-'} "
                     f"| {p.method} | {p.overall:.1f}% | {p.model} | {p.source} | {p.note} |")
    lines += ["", "Per task type, the ReAct paper (PaLM-540B, success %):", "",
              "| method | " + " | ".join(TYPE_TITLES[t] for t in TYPE_NAMES) + " | All |",
              "|" + "---|" * (len(TYPE_NAMES) + 2)]
    for p in (p for p in PUBLISHED if p.by_type):
        lines.append(f"| {p.method} | " + " | ".join(f"{p.by_type[t]:.0f}" for t in TYPE_NAMES)
                     + f" | {p.overall:.0f} |")
    lines += ["", f"## What all {STANDARD_GAMES} games cost (extrapolated from this run's "
              f"{report.meta.get('tasks')} games)", "",
              "| variant | LLM calls/game | tokens/game | tokens/LLM call | "
              f"{STANDARD_GAMES} games: LLM calls | {STANDARD_GAMES} games: tokens |",
              "|---|---|---|---|---|---|"]
    for r in report.rows:
        calls, tokens = r.get("llm_calls_per_task", 0), r.get("tokens_per_task", 0)
        lines.append(f"| {r['variant']} | {calls:.1f} | {tokens:,.0f} | {r['tokens_per_call']:,.0f} "
                     f"| {calls * STANDARD_GAMES:,.0f} | {tokens * STANDARD_GAMES:,.0f} |")
    return "\n".join(lines) + "\n"


def plot(report: Report, path: Path) -> bool:
    """Success overall and per task type per variant, the papers' figure beside each; and
    Reflexion's success by trial. False when matplotlib (the bench extra) is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = report.rows
    curves = [r for r in rows if r.get("solved_by_trial")]
    fig, axes = plt.subplots(1, 2 if curves else 1, figsize=(11 if curves else 7, 3.8),
                             squeeze=False)
    left = axes[0][0]
    names = [r["variant"] for r in rows]
    xs = range(len(names))
    bars = left.bar([x - 0.2 for x in xs], [100 * r["success"] for r in rows], 0.4,
                    label="measured here", color="#4c72b0")
    left.bar_label(bars, fmt="%.0f")
    best = {}
    for p in PUBLISHED:
        best[p.compares_to] = max(best.get(p.compares_to, 0), p.overall)
    paper = left.bar([x + 0.2 for x in xs], [best.get(n, 0) for n in names], 0.4,
                     label="best published figure", color="#c8c8c8", hatch="//")
    left.bar_label(paper, fmt="%.0f")
    left.set_xticks(list(xs), names, rotation=20)
    left.set_ylim(0, 110)
    left.set_ylabel("games won, %")
    left.legend(fontsize=8, loc="upper left")
    if curves:
        right = axes[0][1]
        for r in curves:
            ys = [100 * (v or 0) for v in r["solved_by_trial"]]
            right.plot(range(1, len(ys) + 1), ys, marker="o", label=r["variant"])
        right.axhline(97.0, ls="--", color="grey", lw=1)
        right.text(1, 98.5, "Reflexion paper: 97% (text-davinci-003, 12 trials)", fontsize=7)
        right.set_ylim(0, 110)
        right.set_xlabel("trial")
        right.set_ylabel("games solved, %")
        right.legend(fontsize=8)
    fig.suptitle(f"ALFWorld ({report.meta.get('llm')}, {report.meta.get('tasks')} games)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(report: Report, out_dir: Path, stem: str) -> dict[str, Path]:
    return write(report, out_dir, stem, render=markdown, draw=plot,
                 extra={"published": [asdict(p) for p in PUBLISHED]})
