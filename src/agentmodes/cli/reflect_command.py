"""`agentmodes reflect "task"`: Reflection or Reflexion on a one-off task.

Each draft, test result, critique, refinement, trial and lesson is printed to stderr as it
happens; the final answer goes to stdout (so `> primes.py` keeps just the code), and its
cost (LLM calls, tokens, time) closes the trace. `--json` prints every event as a JSON line.

Tests (`--tests`): "auto" lets the model write unit tests first (seed 004's self-generated
tests) for code tasks; "none" relies on the reviewer alone; FILE holds assert lines.
Evaluators (`--evaluator`, Reflexion's judge): the tests when there are any, else the
reviewer; or a comma-separated list that must all pass, from "tests", "reviewer" and
"heuristic" (seed 004's rule heuristic over the agent's trajectory: the same invalid action
at the same place more than 3 times in a row, or more than --max-steps steps).
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from . import output
from .main import app, fail

STRATEGIES = ("reflection", "reflexion")
EVALUATORS = ("auto", "tests", "reviewer", "heuristic")
ACTORS = ("direct", "cot", "plan-and-solve")
KINDS = ("auto", "code", "text")
_CODE_WORDS = re.compile(r"\b(python|function|code|program|script|implement|class|"
                         r"funktion|programm|skript)\b", re.IGNORECASE)


def default_memory_path() -> str:
    """$AGENTMODES_MEMORY (a file or a postgresql:// URL), else the user's data folder."""
    base = os.environ.get("AGENTMODES_MEMORY")
    if base:
        return base if "://" in base else str(Path(base).expanduser())
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return str(data / "agentmodes" / "memory.db")


def _kind(kind: str, task: str) -> str:
    if kind != "auto":
        return kind
    return "code" if _CODE_WORDS.search(task) else "text"


def _function_name(task: str) -> str:
    match = re.search(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", task)
    return match.group(1) if match else ""


def _tests_evaluator(tests: str, kind: str, task: str, llm: Any) -> tuple[Any, list[dict]]:
    """The evaluator for --tests, and the events that describe how it was made."""
    from ..evaluators.unit_tests import SelfTests, parse_test_lines
    from ..events import status
    from ..modes.self_correction import generate_unit_tests

    if tests == "none":
        return None, []
    if tests == "auto":
        if kind != "code":
            return None, []            # text answers have no unit tests; the reviewer judges
        lines, usage = generate_unit_tests(llm, task, entry_point=_function_name(task))
        return SelfTests(lines), [status("evaluation", phase="tests_written", tests=lines,
                                         usage=usage.as_dict())]
    path = Path(tests).expanduser()
    if not path.is_file():
        raise fail(f"--tests: no such file {path} (use auto, none or a file of assert lines)")
    if kind != "code":
        raise fail("--tests FILE runs Python asserts, so it needs a code task (--kind code)")
    lines = parse_test_lines(path.read_text(encoding="utf-8", errors="replace"))
    if not lines:
        raise fail(f"--tests: {path} holds no valid assert line")
    return SelfTests(lines), [status("evaluation", phase="tests_loaded", tests=lines)]


@app.command()
def reflect(
    task: str = typer.Argument(..., help="What to write or answer."),
    strategy: str = typer.Option("reflection", "--strategy", help="reflection | reflexion"),
    tests: str = typer.Option("auto", "--tests", help="auto (the model writes unit tests) | "
                              "none | FILE of assert lines"),
    max_iterations: int = typer.Option(3, "--max-iterations",
                                       help="reflection: critique rounds; reflexion: trials"),
    llm: Optional[str] = typer.Option(None, "--llm", help=(
        "local (default, embedded model) | GGUF_PATH | openai:MODEL; default $AGENTMODES_LLM")),
    kind: str = typer.Option("auto", "--kind", help="auto | code | text"),
    focus: Optional[str] = typer.Option(None, "--focus", help=(
        "What the reviewer looks for; 'efficiency' is seed 001's reviewer for code (strict, "
        "time complexity, a better algorithm such as a sieve, 'no improvement needed' only "
        "when optimal)")),
    language: str = typer.Option("auto", "--language", help="auto | de | en | zh (prompts)"),
    actor: str = typer.Option("direct", "--actor", help=(
        "without --kb, who writes the attempts: direct (one prompt), cot (chain-of-thought: "
        "reasoning, then the answer), plan-and-solve (a plan, then the solution)")),
    memory: Optional[str] = typer.Option(None, "--memory", help=(
        "reflexion: file or postgresql:// URL of the lessons per task (default "
        "$AGENTMODES_MEMORY or ~/.local/share/agentmodes/memory.db)")),
    no_memory: bool = typer.Option(False, "--no-memory", help="reflexion: keep lessons in this "
                                   "run only"),
    evaluator: str = typer.Option("auto", "--evaluator", help=(
        "reflexion's judge: auto (the tests, else the reviewer) or a comma-separated list "
        "that must all pass: tests, reviewer, heuristic (seed 004's rule; needs --kb)")),
    max_steps: int = typer.Option(30, "--max-steps", min=1, help="heuristic: most steps a "
                                  "trial may take"),
    kb: Optional[str] = typer.Option(None, "--kb", help="Answer with an agent over this "
                                      "knowledge base; the loop works on its final answer."),
    mode: str = typer.Option("reflact", "--mode", help="with --kb: act | react | reflact | "
                             "plan-and-solve (the agent that writes the first attempt)"),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Draft, critique and refine (reflection), or trials with lessons (reflexion).

    \b
    Examples:
      agentmodes reflect "Write primes_up_to(n) returning all primes in [1, n]." --tests auto
      agentmodes reflect "..." --strategy reflexion --max-iterations 3 --json
      agentmodes reflect "Wann hat die DG Agentur geöffnet?" --kb kb.db --kind text
    """
    from ..llm.registry import load_llm
    from ..modes.reflection import Reflection, Reviewer

    if not task.strip():
        raise fail("the task is empty: say what to write, e.g. agentmodes reflect "
                   "\"Write primes_up_to(n) returning all primes in [1, n]\"")
    if strategy not in STRATEGIES:
        raise fail(f"unknown strategy {strategy!r} (choose {', '.join(STRATEGIES)})")
    if kind not in KINDS:
        raise fail(f"unknown kind {kind!r} (choose {', '.join(KINDS)})")
    if not 0 <= max_iterations <= 20 or (strategy == "reflexion" and max_iterations < 1):
        raise fail("--max-iterations must be between 0 (1 for reflexion) and 20")
    if actor not in ACTORS:
        raise fail(f"unknown actor {actor!r} (choose {', '.join(ACTORS)})")
    if language not in ("auto", "de", "en", "zh"):
        raise fail(f"unknown language {language!r} (choose auto, de, en or zh)")
    if kb is not None and mode not in ("act", "react", "reflact", "plan-and-solve"):
        raise fail(f"unknown mode {mode!r} (choose act, react, reflact or plan-and-solve)")
    judges = _evaluator_names(evaluator, kb)
    kind = "text" if kb is not None or actor == "cot" else _kind(kind, task)
    output.set_quiet(quiet)
    model = load_llm(llm)
    view = ReflectView(as_json)
    test_suite, intro = _tests_evaluator(tests, kind, task, model)
    view.extra_usage(intro)
    with _actor(model, kind, kb, mode, language, actor) as actor:
        if strategy == "reflection":
            events = Reflection(model, actor, kind=kind, max_iterations=max_iterations,
                                focus=focus, evaluator=test_suite,
                                language=language).stream(task)
            view.show(intro, events)
        else:
            judge = _judge(judges, test_suite, lambda: Reviewer(model, kind=kind, focus=focus,
                                                                language=language), max_steps)
            _reflexion(model, actor, judge, task, max_iterations, memory, no_memory, view,
                       intro, language)


def _evaluator_names(text: str, kb: Optional[str]) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in EVALUATORS]
    if not names or unknown:
        raise fail(f"unknown evaluator {(unknown or [text])[0]!r} (choose auto, or a "
                   "comma-separated list of tests, reviewer, heuristic)")
    if "auto" in names and len(names) > 1:
        raise fail("--evaluator auto cannot be combined with others")
    if "heuristic" in names and kb is None:
        raise fail("--evaluator heuristic judges an agent's trajectory: give --kb")
    return names


def _judge(names: list[str], tests: Any, reviewer: Any, max_steps: int) -> Any:
    """Reflexion's evaluator from --evaluator: all of the named ones must pass."""
    from ..evaluators.heuristics import RuleHeuristic, all_of

    if names == ["auto"]:
        return tests or reviewer()
    if "tests" in names and tests is None:
        raise fail("--evaluator tests needs tests: a code task with --tests auto or FILE")
    made = {"tests": lambda: tests, "reviewer": reviewer,
            "heuristic": lambda: RuleHeuristic(max_steps=max_steps)}
    judges = [made[n]() for n in names]
    return judges[0] if len(judges) == 1 else all_of(judges)


@contextmanager
def _actor(model: Any, kind: str, kb: Optional[str], mode: str, language: str = "auto",
           strategy: str = "direct"):
    """A prompt actor, or an agent over the knowledge base (closed afterwards)."""
    from ..modes.actors import AgentActor, LLMActor
    from ..modes.prompt_actors import ChainOfThoughtActor, PlanAndSolveActor

    if kb is None:
        if strategy == "cot":
            yield ChainOfThoughtActor(model, language=language)
        elif strategy == "plan-and-solve":
            yield PlanAndSolveActor(model, kind=kind, language=language)
        else:
            yield LLMActor(model, kind=kind, language=language)
        return
    from ..knowledge.base import KnowledgeBase
    from ..settings import ChatbotSettings
    from .kb_commands import kb_path

    base = KnowledgeBase.open(kb_path(kb), create=False)
    try:
        yield AgentActor(llm=model, knowledge=base, language=language,
                         settings=ChatbotSettings(agent_mode=mode, language=language))
    finally:
        base.close()


def _reflexion(model: Any, actor: Any, judge: Any, task: str, trials: int,
               memory: Optional[str], no_memory: bool, view: "ReflectView",
               intro: list[dict], language: str = "auto") -> None:
    from ..modes.reflexion import Reflexion

    store = None
    if not no_memory:
        from ..store.memory import ReflexionMemoryStore
        location = memory or default_memory_path()
        if "://" not in location:
            Path(location).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store = ReflexionMemoryStore(location)
    try:
        events = Reflexion(model, actor, judge, max_trials=trials, memory=store,
                           language=language).stream(task)
        view.show(intro, events)
    finally:
        if store is not None:
            store.close()


class ReflectView:
    """The trace for a person (stderr) and the answer (stdout), or JSON lines."""

    def __init__(self, as_json: bool) -> None:
        from rich.console import Console
        self.as_json = as_json
        self.err = Console(stderr=True, highlight=False, soft_wrap=True, quiet=output.quiet())
        self.out = Console(highlight=False, soft_wrap=True)
        self.before: dict[str, int] = {}
        self.started = time.perf_counter()     # wall time includes writing the tests

    def extra_usage(self, events: list[dict]) -> None:
        """Calls made before the loop (writing the tests) count towards the cost."""
        for e in events:
            for key, value in (e.get("usage") or {}).items():
                self.before[key] = self.before.get(key, 0) + int(value)

    def show(self, intro: list[dict], events) -> None:
        for event in self._ordered(intro, events):
            if event.get("done"):
                for key, value in self.before.items():
                    event["usage"][key] = event["usage"].get(key, 0) + value
            if self.as_json:
                output.emit_event(event)
            elif event.get("done"):
                self._done(event)
            else:
                self._status(event)

    @staticmethod
    def _ordered(intro: list[dict], events):
        """The loop's "starting" first, then how the tests were made, then the rest."""
        pending = list(intro)
        for event in events:
            yield event
            if pending:
                yield from pending
                pending = []
        yield from pending

    def _block(self, title: str, text: str, style: str = "") -> None:
        self.err.rule(title, style="dim")
        self.err.print(text.rstrip(), style=style or None, markup=False)

    def _status(self, e: dict) -> None:
        s, err = e.get("status"), self.err
        where = f" {e['iteration']}" if "iteration" in e else ""
        if s == "starting":
            err.print(f"[bold]{e['strategy']}[/] · {e['task']}")
        elif s == "evaluation" and e.get("phase"):
            self._block(f"Unit tests ({len(e['tests'])})", "\n".join(e["tests"]), "dim")
        elif s == "draft":
            if e.get("plan"):
                self._block("Plan", "\n".join(f"{n}. {t}" for n, t in enumerate(e["plan"], 1)),
                            "cyan")
            self._block(f"Draft{' (trial ' + str(e['trial']) + ')' if 'trial' in e else ''}",
                        e["content"])
        elif s == "evaluation":
            mark = "[green]passed[/]" if e["passed"] else "[red]failed[/]"
            err.print(f"[bold]Tests{where}:[/] {mark} (score {e['score']:.2f})")
            if not e["passed"] and e.get("feedback"):
                err.print(e["feedback"].rstrip(), style="dim", markup=False)
        elif s == "critique":
            verdict = e.get("verdict") or "no verdict"
            self._block(f"Critique{where} · verdict: {verdict}", e["content"], "yellow")
        elif s == "refinement":
            self._block(f"Refinement{where}", e["content"])
        elif s == "trial":
            err.rule(f"[bold]Trial {e['trial']}[/] ({len(e['reflections'])} lesson(s) in memory)")
        elif s == "self_reflection":
            self._block("Self-reflection", e["content"], "cyan")
        elif s == "memory" and e.get("loaded") and e["reflections"]:
            err.print(f"[cyan]{len(e['reflections'])} lesson(s) from earlier runs of this task[/]")
        elif s == "max_iterations_reached":
            err.print(f"[red]iteration limit reached[/] after {e['iterations']} refinement(s)")
        elif s == "error":
            err.print(f"[red]error:[/] {e['message']}", markup=True)

    def _done(self, e: dict) -> None:
        self.err.rule("Result", style="dim")
        self.out.print(e["full_response"].rstrip(), markup=False)
        usage = e.get("usage") or {}
        outcome = e.get("stop_reason", "")
        if e.get("evaluation"):
            outcome += ", tests " + ("passed" if e["evaluation"]["passed"] else "failed")
        self.err.print(f"[dim]{e['strategy']}: {e['iterations']} "
                       f"{'trial(s)' if e['strategy'] == 'reflexion' else 'refinement(s)'} "
                       f"({outcome}); {usage.get('calls', 0)} LLM call(s), "
                       f"{usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)} "
                       f"tokens, {time.perf_counter() - self.started:.1f}s[/]")
