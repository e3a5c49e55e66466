"""`agentmodes bench modes`: the seeds' comparison tables, measured.

Seeds 000 and 002 compare the modes point by point (tokens per iteration, typical
iterations, self-correction, speed) and seed 001 weighs Reflection's extra calls and latency
against its quality gain; none of those figures was measured. This runs the comparison of
`agentmodes compare` (compare/) on QA sets with gold answers (HotpotQA's distractor sample
over its pooled paragraphs, XQuAD-en over its 240 paragraphs; bench/answer_data.py) with one
or more models, and writes each seed figure beside what was measured, with where each
comes from. Runs are resumable (one JSON line per question and mode under
<out>/runs/modes/, --fresh starts over).

Definitions (the seeds do not give theirs): a step is one LLM call of the loop (reasoning
and action); its completion tokens are what the mode writes, its prompt tokens what it
reads (system prompt, question and every earlier step, sent again on each call). Iterations
are the loop's; the answer written after the loop stops (adaptive exit, limit) is one more
call. Reflection rows reuse the mode's run as their draft (compare/runner.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from ..compare.questions import Question
from ..compare.report import plot, summarize
from ..compare.runner import Comparison, RunRecord, variants as variant_names
from ..settings import ChatbotSettings
from .answer_data import DATASETS, QASet, build_kb, load_qa
from .hotpotqa import SHORT_ANSWER
from .results import results_dir, write_results
from .runs import Job, RunLog, resumed_note, run_jobs, slug

MODES = ("act", "react", "reflact")
# The seeds' own figures, verbatim, with where each is written.
SEED_FIGURES: list[dict[str, Any]] = [
    {"aspect": "tokens per iteration", "act": "~50-100", "react": "~150-300",
     "reflact": "~200-400",
     "source": "seed 002 'Vergleich' (ACT ~50-100, ReACT ~150-300); seed 000 'Vergleich: "
               "ReACT vs ReflAct' (Token/Iteration ~150-300, ~200-400)"},
    {"aspect": "typical iterations", "act": "-", "react": "2-5", "reflact": "2-5",
     "source": "seed 000 'Vergleich: ReACT vs ReflAct' (Typische Iterationen)"},
    {"aspect": "speed", "act": "fast (schnell)", "react": "medium (mittel)", "reflact": "-",
     "source": "seed 002 'Vergleich' (Geschwindigkeit)"},
    {"aspect": "self-correction", "act": "-", "react": "possible (möglich)",
     "reflact": "systematic (systematisch)",
     "source": "seed 000 'Vergleich: ReACT vs ReflAct' (Selbstkorrektur)"},
    {"aspect": "Reflection on top", "act": "more calls, more latency, better quality",
     "react": "", "reflact": "",
     "source": "seed 001 'Reflection的特点' (成本增加: 模型调用开销、任务延迟增加; 质量跃迁)"},
]


def settings_for(dataset: str, max_iterations: int) -> ChatbotSettings:
    """HotpotQA is multi-hop (+2 iterations, seed 000); XQuAD questions are lookups. The
    short-answer instruction is `bench hotpotqa`'s, so EM means the same in both."""
    return ChatbotSettings(task_type="multihop" if dataset == "hotpotqa" else "lookup",
                           language="en", agent_max_iterations=max_iterations,
                           system_prompt=SHORT_ANSWER)


def questions_of(qa: QASet, limit: Optional[int]) -> list[Question]:
    return [Question(i, q.id, q.question, tuple(q.answers))
            for i, q in enumerate(qa.sample(limit), start=1)]


def run_dataset(name: str, llm: Any, llm_label: str, *, modes: Sequence[str], reflection: int,
                limit: Optional[int], max_iterations: int, workers: int, data_dir: Any,
                out_dir: Path, fresh: bool, show_progress: bool) -> dict[str, Any]:
    """One dataset with one model: every row (logged, resumable) and the summary."""
    from ..knowledge.base import KnowledgeBase

    qa = load_qa(name, data_dir)
    questions = questions_of(qa, limit)
    kb_path, _ = build_kb(qa)
    log = RunLog(out_dir / "runs" / "modes" / f"{name}_{slug(llm_label)}"
                 f"{'_r' + str(reflection) if reflection else ''}.jsonl", fresh=fresh)
    by_id = {q.id: q for q in questions}
    with KnowledgeBase.open(kb_path, create=False) as kb:
        comparison = Comparison(llm, kb, modes=modes, reflection=reflection, workers=1,
                                settings=settings_for(name, max_iterations))

        def work(job: Job) -> dict:
            rows: list[RunRecord] = comparison.one(by_id[job.task_id], job.variant)
            return {"rows": [r.as_dict() for r in rows],
                    "error": next((r.figures.error for r in rows if r.figures.error), None)}

        records = run_jobs([Job(q.id, m) for q in questions for m in modes], work, log,
                           workers=workers, description=f"modes {name} ({llm_label})",
                           show_progress=show_progress)
    rows = [row for rec in records for row in rec.get("rows") or ()]
    names = variant_names(modes, reflection)
    return {"dataset": name, "llm": llm_label, "questions": len(questions),
            "knowledge base": f"{len(qa.passages)} passages",
            "settings": f"task_type {settings_for(name, max_iterations).task_type}, "
                        f"agent_max_iterations {max_iterations}, short-answer instruction, "
                        f"reflection rounds {reflection}",
            "resumed": resumed_note(records), "summary": summarize(rows, names),
            "rows": rows}


# -- the tables ---------------------------------------------------------------------------
def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


MEASURED = [  # (aspect, summary key, digits, which seed aspect it answers)
    ("completion tokens per step", "completion_tokens_per_step", 0, "tokens per iteration"),
    ("prompt tokens per step", "prompt_tokens_per_step", 0, "tokens per iteration"),
    ("iterations per question", "iterations_per_question", 2, "typical iterations"),
    ("LLM calls per question", "llm_calls_per_question", 2, ""),
    ("tokens per question", "tokens_per_question", 0, ""),
    ("seconds per question", "wall_s_per_question", 1, "speed"),
    ("parse errors (all questions)", "parse_errors", 0, ""),
    ("actions that found nothing new", "unproductive_actions", 0, ""),
    ("... followed by a different action (share)", "correction_rate", 2, "self-correction"),
    ("adaptive exits (questions)", "adaptive_exits", 0, ""),
    ("iteration limit reached (questions)", "max_iterations_reached", 0, ""),
    ("exact match", "em", 3, ""),
    ("F1", "f1", 3, ""),
    ("gold in answer", "gold_in_answer", 3, ""),
]


def measured_rows(result: dict[str, Any], modes: Sequence[str]) -> list[list[str]]:
    """The seeds' table, measured: an aspect per row, a column per variant, and what the
    seed says about that aspect in the last column."""
    seeds = {f["aspect"]: f for f in SEED_FIGURES}
    by = {s["variant"]: s for s in result["summary"]}
    rows = []
    for aspect, key, digits, seed_aspect in MEASURED:
        seed = seeds.get(seed_aspect) or {}
        said = "; ".join(f"{m} {seed[m]}" for m in modes if seed.get(m, "-") != "-")
        rows.append([aspect] + [_fmt(by[v].get(key), digits) for v in by] + [said])
    return rows


def markdown(results: Sequence[dict[str, Any]], modes: Sequence[str], meta: dict) -> str:
    lines = ["# The modes compared: the seeds' figures and ours", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()] + [""]
    lines += ["## What the seeds say", "", "| aspect | " + " | ".join(modes) + " | source |",
              "|" + "---|" * (len(modes) + 2)]
    for f in SEED_FIGURES:
        lines.append(f"| {f['aspect']} | " + " | ".join(f.get(m, "") or "" for m in modes)
                     + f" | {f['source']} |")
    lines += ["", "Definitions: a step is one LLM call of the loop (its reasoning and action); "
                  "completion tokens are what the mode writes, prompt tokens what it reads "
                  "(system prompt, question, every earlier step, sent again on each call). "
                  "The seeds do not say which of these their 'tokens per iteration' counts."]
    for result in results:
        cols = [s["variant"] for s in result["summary"]]
        lines += ["", f"## Measured: {result['dataset']} with {result['llm']} "
                      f"({result['questions']} questions)", "",
                  f"- knowledge base: {result['knowledge base']}",
                  f"- settings: {result['settings']}", f"- resumed: {result['resumed']}", ""]
        if result.get("plot"):
            lines += [f"![{result['dataset']} {result['llm']}]({result['plot']})", ""]
        lines += ["| aspect | " + " | ".join(cols) + " | the seed says |",
                  "|" + "---|" * (len(cols) + 2)]
        lines += ["| " + " | ".join(row) + " |" for row in measured_rows(result, modes)]
        lines += ["", _reflection_note(result, modes)]
    return "\n".join(line for line in lines if line is not None).rstrip() + "\n"


def _reflection_note(result: dict[str, Any], modes: Sequence[str]) -> str:
    """Seed 001's trade-off in numbers: what Reflection added on the same drafts."""
    by = {s["variant"]: s for s in result["summary"]}
    parts = []
    for mode in modes:
        base, top = by.get(mode), by.get(mode + "+reflection")
        if not base or not top:
            continue
        calls = (top["llm_calls_per_question"] or 0) - (base["llm_calls_per_question"] or 0)
        secs = (top["wall_s_per_question"] or 0) - (base["wall_s_per_question"] or 0)
        gain = (top.get("gold_in_answer") or 0) - (base.get("gold_in_answer") or 0)
        parts.append(f"{mode}: +{calls:.2f} calls, +{secs:.1f} s per question, gold in "
                     f"answer {gain:+.3f}")
    return ("Reflection on top (same drafts): " + "; ".join(parts) + ".") if parts else ""


def run_modes(llms: Sequence[tuple[str, Any, int]], *, datasets: Sequence[str],
              modes: Sequence[str] = MODES, reflection: int = 1, limit: Optional[int] = None,
              max_iterations: int = 5, data_dir: Any = None, out_dir: Optional[Path] = None,
              fresh: bool = False, show_progress: bool = True
              ) -> tuple[list[dict[str, Any]], dict[str, Path]]:
    """Every dataset with every (label, model, workers); writes <stem>.json/.md/.png."""
    import os

    out = results_dir(out_dir)
    results = []
    for label, llm, workers in llms:
        for name in datasets:
            results.append(run_dataset(name, llm, label, modes=modes, reflection=reflection,
                                       limit=limit, max_iterations=max_iterations,
                                       workers=workers, data_dir=data_dir, out_dir=out,
                                       fresh=fresh, show_progress=show_progress))
    stem = "modes_" + "_".join(slug(label) for label, _, _ in llms) + \
        (f"_limit{limit}" if limit else "")
    paths: dict[str, Path] = {}
    for result in results:
        png = out / f"{stem}_{result['dataset']}_{slug(result['llm'])}.png"
        if plot(result["summary"], png, f"{result['dataset']}, {result['llm']}, "
                                        f"n={result['questions']}"):
            result["plot"] = png.name
            paths[f"png {result['dataset']} {result['llm']}"] = png
    meta = {"datasets": ", ".join(datasets), "llms": ", ".join(label for label, _, _ in llms),
            "modes": ", ".join(modes), "reflection rounds": reflection,
            "questions per dataset": limit or "all",
            "load average at the end": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    data = {"meta": meta, "seeds": SEED_FIGURES, "results": results}
    json_path, md_path = write_results(out, stem, data, markdown(results, modes, meta))
    paths.update(json=json_path, md=md_path)
    return results, paths
