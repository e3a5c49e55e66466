"""HotpotQA with the gold context (seed 004's "给定标准答案上下文" row; the Reflexion paper's
"CoT (GT)"): the question's supporting paragraphs are given, nothing is searched, so only
the reasoning is tested. Strategies:

- cot:       one chain-of-thought attempt over the gold paragraphs (ChainOfThoughtActor).
- reflexion: the same actor as Reflexion's, exact match as the evaluator (the paper's
             oracle evaluator), a verbal lesson after each wrong answer, up to --trials.

The published row is shown beside ours: Shinn et al. 2023 report 0.61 for CoT (GT) and
0.75 with Reflexion (Fig. 4b, the 100 questions of this sample, up to 7 trials), with
text-davinci-003, the model the authors' hotpotqa_runs code uses by default.
Answers are scored like the distractor setting (official normalisation, citations removed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from ..llm.base import ChatModel
from ..modes.prompt_actors import ChainOfThoughtActor
from .hotpotqa import SHORT_ANSWER, Question, em_report, load_questions, solve
from .llm_report import Report, write
from .runs import Job, RunLog, parse_names, results_dir, run_jobs, slug

SETTINGS = ("distractor", "gold-context")
STRATEGIES = ("cot", "reflexion")
PUBLISHED = [{"variant": "CoT (GT) only", "em": 0.61},
             {"variant": "CoT (GT) + Reflexion", "em": 0.75}]
PUBLISHED_SOURCE = ("Shinn et al. 2023, Reflexion, Fig. 4(b) 'HotPotQA CoT (GT)', the same "
                    "100 questions, up to 7 trials, text-davinci-003 (the default model of the "
                    "authors' hotpotqa_runs/agents.py); seed 004's table: 61% -> 75%")


def parse_strategies(text: str | Sequence[str]) -> list[str]:
    return parse_names(text, STRATEGIES, "strategy")


def gold_context(q: Question) -> str:
    """The supporting paragraphs, in the order HotpotQA lists the supporting facts."""
    by_title = dict(q.paragraphs)
    return "\n".join(f"{title}: {by_title[title]}" for title in q.supporting if title in by_title)


def answer_gold(q: Question, strategy: str, llm: ChatModel, *, trials: int = 3
                ) -> dict[str, Any]:
    actor = ChainOfThoughtActor(llm, context=gold_context(q), instructions=SHORT_ANSWER,
                                language="en")
    record, result = solve(q, actor, llm, reflexion=strategy == "reflexion", trials=trials)
    if strategy == "reflexion":
        record["reflections"] = [t.reflection for t in result.trials if t.reflection]
    else:
        record["reasoning"] = result.trajectory
    record["iterations"] = record["trials"]
    return record


def run_hotpotqa_gold(llm: ChatModel, *, llm_label: str, strategies: Sequence[str],
                      limit: Optional[int] = None, workers: int = 1, data_dir: Any = None,
                      out_dir: Optional[Path] = None, trials: int = 3,
                      show_progress: bool = True, fresh: bool = False
                      ) -> tuple[Report, dict[str, Path]]:
    questions = load_questions(data_dir)
    if limit is not None:
        questions = questions[:max(0, limit)]
    out_dir = results_dir(out_dir)
    log = RunLog(out_dir / "runs" / "hotpotqa_gold" / f"{slug(llm_label)}.jsonl", fresh=fresh)
    by_id = {q.id: q for q in questions}
    jobs = [Job(q.id, s) for s in strategies for q in questions]
    records = run_jobs(jobs, lambda job: answer_gold(by_id[job.task_id], job.variant, llm,
                                                     trials=trials),
                       log, workers=workers, description=f"hotpotqa gold ({llm_label})",
                       show_progress=show_progress)
    report = em_report("hotpotqa (gold context)", records, strategies, {
        "llm": llm_label, "tasks": len(questions), "strategies": ", ".join(strategies),
        "context": "the question's gold supporting paragraphs (no search)",
        "settings": f"chain-of-thought actor, reflexion trials {trials}, evaluator exact "
                    "match (official HotpotQA normalisation)"},
        reference=PUBLISHED, reference_source=PUBLISHED_SOURCE)
    stem = f"hotpotqa_gold_{slug(llm_label)}" + (f"_limit{limit}" if limit is not None else "")
    return report, write(report, out_dir, stem)
