"""`agentmodes compare QUESTIONS --kb KB`: the modes side by side on your own questions.

Each question runs in every mode (--modes), optionally with Reflection rounds on top of
each mode's answer (--reflection N: extra rows `mode+reflection`, same draft). The result
on stdout is a table per question and a summary per mode (rich tables, never cut), or with
`--json` one JSON line per run ("type": "run") and per mode ("type": "summary"). `--out DIR`
also writes a Markdown report with a plot, a CSV and every run's events. Progress goes to
stderr. A run that fails is a row with its error (the others go on); the exit code is then 1.
"""

from __future__ import annotations

import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer

from . import output
from .ask_command import LLM_HELP, Language, TaskType, TASK_HELP
from .kb_commands import KB_HELP, kb_path
from .main import RUNTIME, app, fail

DEFAULT_MODES = "act,react,reflact"
JUDGE_HELP = ("Without gold answers, the Reviewer judges each answer (grounded? complete?): "
              "'auto' (default) uses the --llm model, 'off' skips it, or give another LLM "
              "spec. Reported as a model's judgement, not a score.")


def _read(path: str, what: str) -> tuple[str, str]:
    """The text of a file (or stdin for '-') and the name errors use for it."""
    if path == output.STDIN:
        return output.read_stdin(what), "stdin"
    file = Path(path).expanduser()
    if not file.is_file():
        raise fail(f"{what} file not found: {path}", RUNTIME)
    from ..knowledge.extract import UnreadableFile, decode_text
    try:
        return decode_text(file.read_bytes()), str(path)
    except UnreadableFile as err:
        raise fail(f"{path} is not a text file: {err}")


def load_questions(questions: str, answers: Optional[str]) -> list:
    from ..compare.questions import parse_gold, parse_questions

    if questions == output.STDIN and answers == output.STDIN:
        raise fail("stdin can hold the questions or the answers, not both")
    items = parse_questions(*_read(questions, "the questions"))
    if answers is not None:
        items = parse_gold(*_read(answers, "the gold answers"), items)
    return items


def _judge(spec: str, llm: Any, llm_label: str, has_gold: bool, language: str) -> Any:
    from ..compare.scoring import Judge

    if spec == "off" or has_gold:
        return None
    if spec == "auto":
        return Judge(llm, llm_label, language)
    from ..llm.registry import load_llm
    return Judge(load_llm(spec), spec, language)


def _meta(n_questions: int, variants: list, llm_label: str, kb: str, settings: Any,
          reflection: int, judge: Any, comparison: Any) -> dict[str, Any]:
    parallel = (f"{comparison.workers} runs at once (HTTP backend)" if comparison.workers > 1
                else "one run at a time" + ("" if comparison.parallel else
                                            " (only HTTP backends serve several at once)"))
    meta = {"questions": n_questions, "variants": ", ".join(variants), "llm": llm_label,
            "knowledge base": kb,
            "settings": f"task_type {settings.task_type}, agent_max_iterations "
                        f"{settings.agent_max_iterations} (budget {settings.max_iterations}), "
                        f"language {settings.language}",
            "reflection rounds": reflection, "runs": parallel,
            "judge": f"{judge.label} (a model's judgement)" if judge else "none",
            "written": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{os.cpu_count()} cores, {platform.machine()}"}
    if hasattr(os, "getloadavg"):
        meta["load average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return meta


@app.command()
def compare(
    questions: str = typer.Argument(..., metavar="QUESTIONS", help=(
        "A text file with one question per line, JSON Lines ({\"question\", \"id\"?, "
        "\"answer(s)\"?}), or - for stdin.")),
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    modes: str = typer.Option(DEFAULT_MODES, "--modes", help=(
        "Comma-separated modes: act, react, reflact, plan-and-solve.")),
    reflection: int = typer.Option(0, "--reflection", min=0, max=3, help=(
        "Reflection rounds (critique, refine) on top of each mode's answer: adds a "
        "mode+reflection row that reuses the mode's run as its draft.")),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    answers: Optional[str] = typer.Option(None, "--answers", metavar="GOLD", help=(
        "Gold answers: JSON Lines ({\"id\" or \"question\", \"answer(s)\"}), a JSON object "
        "{question: answer}, or one answer per line in the questions' order. Scores EM, F1 "
        "and gold-in-answer.")),
    judge: str = typer.Option("auto", "--judge", help=JUDGE_HELP),
    task_type: TaskType = typer.Option("lookup", "--task-type", help=TASK_HELP),
    max_iterations: int = typer.Option(5, "--max-iterations", min=1, max=50,
                                       help="agent_max_iterations."),
    language: Language = typer.Option("auto", "--language",
                                      help="Prompt language; auto follows each question."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, max=32, help=(
        "Runs at once for HTTP backends (default: one per mode); the in-process model "
        "always runs one at a time.")),
    out: Optional[Path] = typer.Option(None, "--out", help=(
        "Also write compare.md (with compare.png), compare.csv, compare.jsonl and "
        "compare.events.jsonl into this folder.")),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Run each question in every mode and compare iterations, calls, tokens, time and quality.

    \b
    Examples:
      agentmodes compare questions.txt --kb kb.db
      agentmodes compare questions.jsonl --kb kb.db --answers gold.jsonl --out report/
      agentmodes compare qs.txt --kb kb.db --modes react,reflact --reflection 1
      echo "Wann hat die DG Agentur geöffnet?" | agentmodes compare - --kb kb.db --json
      agentmodes compare qs.txt --kb kb.db --llm openai:gpt-4o-mini --workers 6
    """
    from ..agent import STEP_MODES
    from ..bench.runs import parse_names
    from ..compare import Comparison
    from ..compare.questions import has_gold, missing_gold
    from ..compare.report import summarize, write_files
    from ..knowledge.base import KnowledgeBase
    from ..llm.registry import load_llm
    from ..settings import ChatbotSettings
    from .bench_llm_commands import llm_spec
    from .compare_view import CompareView

    output.set_quiet(quiet)
    chosen = parse_names(modes, list(STEP_MODES), "mode")        # usage errors first
    items = load_questions(questions, answers)
    settings = ChatbotSettings(task_type=task_type, language=language,
                               agent_max_iterations=max_iterations)
    label = llm_spec(llm)
    model = load_llm(label)
    gold = has_gold(items)
    view = CompareView(quiet=output.quiet() or as_json)
    if answers is not None and missing_gold(items):
        view.note(f"{len(missing_gold(items))} question(s) have no gold answer: their "
                  "quality columns stay empty")
    base = KnowledgeBase.open(kb_path(kb), create=False)
    try:
        comparison = Comparison(model, base, modes=chosen, settings=settings,
                                reflection=reflection, workers=workers,
                                judge=_judge(judge, model, label, gold, language))
        meta = _meta(len(items), comparison.variants, label, kb_path(kb), settings,
                     reflection, comparison.judge, comparison)
        view.start(meta, len(items) * len(chosen))
        on_record = (lambda r: output.emit("run", r.as_dict())) if as_json else view.advance
        records = comparison.run(items, on_record=on_record)
    finally:
        base.close()
    view.stop()
    summary = summarize([r.as_dict() for r in records], comparison.variants)
    if as_json:
        for row in summary:
            output.emit("summary", row)
    else:
        view.show(records, summary, meta)
    if out is not None:
        view.files(write_files(out, records, summary, meta))
    failed = [r for r in records if r.figures.error]
    if failed:
        raise fail(f"{len(failed)} of {len(records)} runs failed (first: "
                   f"{failed[0].variant} on question {failed[0].question.index}: "
                   f"{failed[0].figures.error})", RUNTIME)

