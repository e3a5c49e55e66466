"""HotpotQA (the Reflexion paper's 100-question distractor sample) with the agent modes.

The knowledge base is built from the pooled context paragraphs of all 100 questions (1,000
paragraphs, deduplicated by title): each paragraph becomes a small Markdown file (its title
as the heading) in a cache folder, ingested once into a KB file that later runs reuse. The
agent then searches that KB with act, react and reflact; with `reflexion`, each mode also
runs as Reflexion's actor with exact match as the evaluator (as in the paper, an oracle
evaluator: HotpotQA's 32% -> 53% is measured this way).

Answers are scored with the official normalisation (evaluators/text.py) after removing the
agent's citation markers ("[1]"), which are not part of an answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from ..compare.scoring import gold_scores
from ..evaluators.text import ExactMatchEvaluator, exact_match, f1_score, strip_citations
from ..llm.base import ChatModel
from ..modes.actors import AgentActor
from ..modes.reflexion import Reflexion
from ..settings import ChatbotSettings
from .codedata import DataError, data_root
from .llm_report import COST_COLUMNS, Column, Report, cost_summary, mean, write
from .runs import (PROJECT_ROOT, Job, RunLog, parse_names, results_dir, resumed_note,
                   run_jobs, slug)

MODES = ("act", "react", "reflact", "plan-and-solve")
DATA_FILE = Path("hotpotqa") / "hotpot-qa-distractor-sample.jsonl"
CACHE_DIR = PROJECT_ROOT / ".cache" / "hotpotqa"
SHORT_ANSWER = ("Answer with the shortest possible answer: an entity name, a date, a number, "
                "or yes/no, without explanation.")


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str
    answer: str
    type: str
    paragraphs: tuple[tuple[str, str], ...]    # (title, text)
    supporting: tuple[str, ...] = ()          # titles of the gold supporting paragraphs


def load_questions(data_dir: Any = None) -> list[Question]:
    path = data_root(data_dir) / DATA_FILE
    if not path.is_file():
        raise DataError(f"benchmark data file not found: {path}")
    out = []
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                context = row["context"]
                paragraphs = tuple((title, "".join(sentences)) for title, sentences
                                   in zip(context["title"], context["sentences"]))
                facts = row.get("supporting_facts") or {}
                supporting = tuple(dict.fromkeys(facts.get("title") or []))
                out.append(Question(row["id"], row["question"], row["answer"],
                                    row.get("type", ""), paragraphs, supporting))
            except (ValueError, KeyError, TypeError) as err:
                raise DataError(f"{path} line {n}: not a HotpotQA record ({err})") from err
    return out


def pooled_paragraphs(questions: Sequence[Question]) -> dict[str, str]:
    pool: dict[str, str] = {}
    for q in questions:
        for title, text in q.paragraphs:
            pool.setdefault(title, text)
    return pool


def build_kb(questions: Sequence[Question], cache_dir: Path = CACHE_DIR, *,
             embed: bool = True) -> Path:
    """Write the paragraphs as files and ingest them; a rebuilt KB for the same pool is
    reused (ingest skips unchanged files and embeds only what has no vector yet)."""
    from ..knowledge.base import KnowledgeBase

    pool = pooled_paragraphs(questions)
    digest = hashlib.sha256("\x00".join(sorted(pool)).encode("utf-8")).hexdigest()[:12]
    docs = cache_dir / f"paragraphs-{digest}"
    docs.mkdir(parents=True, exist_ok=True)
    for n, title in enumerate(sorted(pool)):
        path = docs / f"{n:04d}-{slug(title)[:60]}.md"
        content = f"# {title}\n\n{pool[title]}\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
    kb_path = cache_dir / f"kb-{digest}.db"
    with KnowledgeBase.open(kb_path) as kb:
        kb.ingest(docs, embed=embed)
    return kb_path


def clean_answer(answer: str) -> str:
    """The answer without citation markers, first line only (small models add prose)."""
    text = strip_citations(answer)
    return text.splitlines()[0].strip() if text else ""


def parse_variants(modes: str | Sequence[str], reflexion: bool) -> list[str]:
    names = parse_names(modes, MODES, "mode")
    return names + ([f"{m}+reflexion" for m in names] if reflexion else [])


def settings_for(mode: str, max_iterations: int) -> ChatbotSettings:
    return ChatbotSettings(agent_mode=mode, task_type="multihop", language="en",
                           agent_max_iterations=max_iterations, system_prompt=SHORT_ANSWER)


def answer_question(q: Question, variant: str, llm: ChatModel, kb: Any, *,
                    max_iterations: int = 5, trials: int = 3) -> dict[str, Any]:
    mode, _, extra = variant.partition("+")
    actor = AgentActor(llm=llm, knowledge=kb, settings=settings_for(mode, max_iterations),
                       model_answer=True,  # EM/F1 of the model's short answer, as the paper
                       language="en")
    record, result = solve(q, actor, llm, reflexion=extra == "reflexion", trials=trials)
    runs = getattr(result, "runs", None)
    record["iterations"] = sum(getattr(r, "iterations", 0) for r in runs if r is not None) \
        if runs is not None else getattr(result.run, "iterations", 0)
    return record


def solve(q: Question, actor: Any, llm: ChatModel, *, reflexion: bool, trials: int
          ) -> tuple[dict[str, Any], Any]:
    """One question by the actor alone, or as Reflexion's actor with exact match as the
    evaluator (the paper's oracle); the scored record and the Attempt or ReflexionResult."""
    if reflexion:
        result = Reflexion(llm, actor, ExactMatchEvaluator(), max_trials=trials,
                           language="en").run(q.question, eval_task={"answer": q.answer},
                                              task_key=q.id)
        raw, usage = result.answer, result.usage
        record = {"trials": len(result.trials), "reflexion_success": result.success}
    else:
        result = actor.act(q.question)
        raw, usage = result.output, result.usage
        record = {"trials": 1}
    answer = clean_answer(raw)
    record.update({"answer": answer, "gold": q.answer, "type": q.type,
                   "em": exact_match(answer, q.answer),
                   "f1": round(f1_score(answer, q.answer), 4), "llm_calls": usage.calls,
                   "prompt_tokens": usage.prompt_tokens,
                   "completion_tokens": usage.completion_tokens})
    return record, result


def gold_in_answer(record: dict) -> bool:
    """The gold answer's words appear somewhere in the answer: tells a model that found the
    answer but wrapped it in a sentence (EM 0) from one that did not find it. Computed from
    the stored answer, so older run logs get it too."""
    return bool(record.get("answer")) and gold_scores(
        record["answer"], [str(record.get("gold") or "")])["gold_in_answer"]


def summarize(records: list[dict], variants: Sequence[str]) -> list[dict]:
    rows = []
    for variant in variants:
        mine = [r for r in records if r["variant"] == variant]
        rows.append({"variant": variant,
                     "em": mean([float(bool(r.get("em"))) for r in mine]),
                     "f1": mean([float(r.get("f1") or 0.0) for r in mine]),
                     "gold_in_answer": mean([float(gold_in_answer(r)) for r in mine]),
                     "trials_per_task": mean([r.get("trials", 0) for r in mine if not r.get("error")]),
                     **cost_summary(mine)})
    return rows


def em_report(benchmark: str, records: list[dict], variants: Sequence[str], meta: dict,
              **extra: Any) -> Report:
    """The HotpotQA table (EM, F1, trials, cost per variant) and its per-task rows."""
    return Report(
        benchmark=benchmark, metric="em",
        columns=[Column("em", "EM"), Column("f1", "F1"),
                 Column("gold_in_answer", "gold in answer"),
                 Column("trials_per_task", "trials/task", "{:.2f}")] + COST_COLUMNS,
        rows=summarize(records, variants), meta={**meta, "resumed": resumed_note(records)},
        tasks=[{k: r.get(k) for k in ("task_id", "variant", "answer", "gold", "em", "f1",
                                        "trials", "llm_calls", "iterations", "time_s", "error")}
               | {"gold_in_answer": gold_in_answer(r)} for r in records], **extra)


def run_hotpotqa(llm: ChatModel, *, llm_label: str, variants: Sequence[str],
                 limit: Optional[int] = None, workers: int = 1, data_dir: Any = None,
                 out_dir: Optional[Path] = None, kb_path: Optional[Path] = None,
                 max_iterations: int = 5, trials: int = 3, embed: bool = True,
                 show_progress: bool = True, fresh: bool = False
                 ) -> tuple[Report, dict[str, Path]]:
    from ..knowledge.base import KnowledgeBase

    questions = load_questions(data_dir)
    pool_size = len(pooled_paragraphs(questions))
    kb_file = kb_path or build_kb(questions, embed=embed)
    if limit is not None:
        questions = questions[:max(0, limit)]
    out_dir = results_dir(out_dir)
    log = RunLog(out_dir / "runs" / "hotpotqa" / f"{slug(llm_label)}.jsonl", fresh=fresh)
    by_id = {q.id: q for q in questions}
    with KnowledgeBase.open(kb_file, create=False) as kb:
        jobs = [Job(q.id, v) for v in variants for q in questions]
        records = run_jobs(jobs, lambda job: answer_question(
            by_id[job.task_id], job.variant, llm, kb, max_iterations=max_iterations,
            trials=trials), log, workers=workers, description=f"hotpotqa ({llm_label})",
            show_progress=show_progress)
    report = em_report("hotpotqa", records, variants, {
        "llm": llm_label, "tasks": len(questions), "variants": ", ".join(variants),
        "knowledge base": f"{pool_size} pooled context paragraphs of the 100 questions",
        "settings": f"task_type multihop, agent_max_iterations {max_iterations}, "
                    f"reflexion trials {trials}, evaluator exact match"})
    stem = f"hotpotqa_{slug(llm_label)}" + (f"_limit{limit}" if limit is not None else "")
    paths = write(report, out_dir, stem)
    return report, paths
