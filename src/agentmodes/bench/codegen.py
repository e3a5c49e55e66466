"""HumanEval and MBPP with a generating LLM: strategies simple, reflection and reflexion.

As in the Reflexion paper's programming setup, the benchmark's own tests only *score* the
final program (ReferenceTests, run in the sandbox); the loops are guided by unit tests the
model writes for itself (SelfTests), so no hidden test leaks into a prompt.

- simple:     one draft from the code generator prompt.
- reflection: draft, then up to `max_iterations` reviewer critiques and refinements; the
              reviewer sees the self-test results (seed 001 + self-generated tests).
- reflexion:  up to `max_trials` trials; after each failed self-test run a verbal lesson
              goes into the next trial's prompt (seed 004). Memory is per task and in-process:
              a benchmark task must not start with lessons from an earlier run of itself.
- tests-only: the seed's ablation of reflexion: the same self-written tests and trials, each
              retry sees its last program with the failing tests, but there is no verbal
              self-reflection (seed 004: "almost no gain" without it).

MBPP gives a description without a signature; like the common MBPP prompt we show the
first of its three asserts so the model knows the function's name and call shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import ConfigError
from ..evaluators.code import CodeTask, ReferenceTests
from ..evaluators.unit_tests import SelfTests
from ..events import Usage
from ..llm.base import ChatModel
from ..modes.actors import LLMActor
from ..modes.reflection import Reflection
from ..modes.reflexion import Reflexion
from ..modes.self_correction import generate_unit_tests
from .codedata import load_code_tasks
from .llm_report import COST_COLUMNS, Column, Report, cost_summary, mean, write
from .runs import Job, RunLog, parse_names, results_dir, resumed_note, run_jobs, slug

STRATEGIES = ("simple", "reflection", "reflexion", "tests-only")
# The published ablation next to ours (Shinn et al. 2023, Table 4: HumanEval Rust, the 50
# hardest problems, GPT-4; seed 004: self-written tests without verbal reflection give
# almost no gain). Shown as reference rows, never mixed with what this run measured.
PUBLISHED_ABLATION = [
    {"variant": "base model (no tests, no reflection)", "pass_at_1": 0.60},
    {"variant": "tests-only (self-written tests, no self-reflection)", "pass_at_1": 0.60},
    {"variant": "reflexion (tests and self-reflection)", "pass_at_1": 0.68},
]
PUBLISHED_SOURCE = ("Shinn et al. 2023, Reflexion, Table 4 (ablation, HumanEval Rust, 50 "
                    "hardest problems, GPT-4); seed 004: self-written tests without verbal "
                    "reflection give almost no gain")


@dataclass(slots=True)
class CodegenSettings:
    max_iterations: int = 2      # reflection: critique/refine rounds
    max_trials: int = 3          # reflexion: trials
    self_tests: int = 5          # asserts the model is asked to write
    max_tokens: int = 512


def parse_strategies(text: str | Sequence[str]) -> list[str]:
    return parse_names(text, STRATEGIES, "strategy")


def task_text(task: CodeTask) -> str:
    """What the model is asked to do (never the hidden tests beyond MBPP's first example)."""
    if task.kind == "humaneval":
        return ("Complete the following Python function. Keep its name and signature.\n"
                f"```python\n{task.prompt.rstrip()}\n```")
    example = f"\nYour function must pass tests like this one:\n{task.test_list[0]}" \
        if task.test_list else ""
    return f"{task.prompt.strip()}{example}"


def solve(task: CodeTask, strategy: str, llm: ChatModel,
          settings: Optional[CodegenSettings] = None) -> dict[str, Any]:
    """Run one strategy on one task and score the final program with the real tests."""
    settings = settings or CodegenSettings()
    text = task_text(task)
    usage, iterations, extra = Usage(), 0, {}
    if strategy == "simple":
        attempt = LLMActor(llm, kind="code", language="en", max_tokens=settings.max_tokens).act(text)
        code, usage = attempt.output, attempt.usage
    else:
        tests, usage = generate_unit_tests(llm, text, entry_point=task.entry_point,
                                           n=settings.self_tests, max_tokens=settings.max_tokens)
        self_tests = SelfTests(tests)
        if strategy == "reflection":
            result = Reflection(llm, kind="code", max_iterations=settings.max_iterations,
                                evaluator=self_tests, language="en",
                                max_tokens=settings.max_tokens).run(text, eval_task=task)
            code, iterations = result.answer, result.iterations
            extra = {"stop_reason": result.stop_reason,
                     "self_tests_passed": bool(result.evaluation and result.evaluation["passed"])}
        elif strategy in ("reflexion", "tests-only"):
            actor = LLMActor(llm, kind="code", language="en", max_tokens=settings.max_tokens)
            result = Reflexion(llm, actor, self_tests, max_trials=settings.max_trials,
                               language="en", verbal=strategy == "reflexion").run(
                                   text, eval_task=task, task_key=task.task_id)
            code, iterations = result.answer, len(result.trials)
            extra = {"stop_reason": "evaluator_passed" if result.success else "max_trials",
                     "self_tests_passed": result.success,
                     "reflections": [t.reflection for t in result.trials if t.reflection]}
        else:
            raise ConfigError(f"unknown strategy {strategy!r}")
        usage = usage + result.usage
        extra["self_tests"] = tests
    final = ReferenceTests()(task, code)
    return {"passed": final.passed, "completion": code, "iterations": iterations,
            "llm_calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "failure": "" if final.passed else final.feedback[-400:], **extra}


def summarize(records: list[dict], strategies: Sequence[str]) -> list[dict]:
    rows = []
    for strategy in strategies:
        mine = [r for r in records if r["variant"] == strategy]
        ok = [r for r in mine if not r.get("error")]
        with_self = [r for r in ok if "self_tests_passed" in r]
        rows.append({"variant": strategy,
                     "pass_at_1": round(sum(bool(r.get("passed")) for r in mine) / len(mine), 4)
                     if mine else 0.0,
                     "self_tests_pass_rate": mean([float(r["self_tests_passed"]) for r in with_self])
                     if with_self else None,     # simple writes no tests
                     **cost_summary(mine)})
    return rows


@dataclass(slots=True)
class CodegenRun:
    report: Report
    paths: dict[str, Path] = field(default_factory=dict)
    log_path: Optional[Path] = None


def run_codegen(benchmark: str, llm: ChatModel, *, llm_label: str, strategies: Sequence[str],
                limit: Optional[int] = None, workers: int = 1, data_dir: Any = None,
                out_dir: Optional[Path] = None, settings: Optional[CodegenSettings] = None,
                show_progress: bool = True, split: str = "test",
                fresh: bool = False) -> CodegenRun:
    tasks = load_code_tasks(benchmark, data_dir, split)
    if limit is not None:
        tasks = tasks[:max(0, limit)]
    out_dir = results_dir(out_dir)
    log = RunLog(out_dir / "runs" / benchmark / f"{slug(llm_label)}.jsonl", fresh=fresh)
    by_id = {t.task_id: t for t in tasks}
    jobs = [Job(t.task_id, s) for s in strategies for t in tasks]
    records = run_jobs(jobs, lambda job: solve(by_id[job.task_id], job.variant, llm, settings),
                       log, workers=workers, description=f"{benchmark} ({llm_label})",
                       show_progress=show_progress)
    report = Report(
        benchmark=benchmark, metric="pass_at_1",
        columns=[Column("pass_at_1", "pass@1"), Column("self_tests_pass_rate", "self-tests pass")]
        + COST_COLUMNS,
        rows=summarize(records, strategies),
        meta={"llm": llm_label, "tasks": len(tasks), "strategies": ", ".join(strategies),
              "scoring": "the benchmark's own tests in the sandbox (final program only)",
              "run log": str(log.path.relative_to(out_dir)) if log.path.is_relative_to(out_dir)
              else str(log.path), "resumed": resumed_note(records)},
        tasks=[{k: r.get(k) for k in ("task_id", "variant", "passed", "llm_calls",
                                        "iterations", "time_s", "error")} for r in records])
    if "tests-only" in strategies:             # the ablation: the paper's rows beside ours
        report.reference, report.reference_source = PUBLISHED_ABLATION, PUBLISHED_SOURCE
    stem = f"{benchmark}_{slug(llm_label)}" + (f"_limit{limit}" if limit is not None else "")
    paths = write(report, out_dir, stem)
    return CodegenRun(report, paths, log.path)
