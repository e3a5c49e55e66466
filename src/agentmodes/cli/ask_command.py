"""`agentmodes ask "question"`: one agent run from the command line.

The live trace (iterations, reflection or thought streaming in, actions, observation
previews) goes to stderr; the answer and its numbered sources go to stdout, so
`agentmodes ask ... > answer.txt` keeps just the answer. `--json` prints every event as
one JSON line on stdout instead (its "type" is the event's status, "delta" or "done").

`agentmodes ask -` reads the question from stdin; `cat notes.md | agentmodes ask "..." -`
hands the piped text to the agent as context of the conversation (before the question).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from . import output
from .kb_commands import KB_HELP, kb_path
from .main import app, fail

MODES = ("act", "react", "reflact", "plan-and-solve")
TASK_TYPES = ("lookup", "multihop")
Mode = Literal["act", "react", "reflact", "plan-and-solve"]
TaskType = Literal["lookup", "multihop"]
Language = Literal["auto", "de", "en", "zh"]
CONTEXT_MAX_CHARS = 12_000     # piped context beyond this is cut (about 3k tokens)
MODE_HELP = ("act: actions only; react: thought, then action; reflact: reflection on the "
             "state relative to the goal, then action; plan-and-solve: a plan of steps "
             "first, then each step with the tools.")
TASK_HELP = "lookup, or multihop (up to agent_max_iterations + 2 iterations, at most 10)."
LLM_HELP = ("local (default, the embedded model) | PATH.gguf | openai:MODEL | "
            "scripted:FILE.json; default $AGENTMODES_LLM.")
SYSTEM_HELP = "Extra instructions prepended to the mode's system prompt (system_prompt)."


def _load_llm(spec: Optional[str]) -> Any:
    from ..llm.registry import load_llm    # llama.cpp loads only when a run needs it
    return load_llm(spec)


@app.command()
def ask(
    question: str = typer.Argument(..., metavar="QUESTION",
                                   help="The question to answer from the documents; - reads "
                                        "it from stdin."),
    context: Optional[str] = typer.Argument(None, metavar="[-]", show_default=False,
                                            help="- after the question: stdin is context."),
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    mode: Mode = typer.Option("reflact", "--mode", help=MODE_HELP),
    task_type: TaskType = typer.Option("lookup", "--task-type", help=TASK_HELP),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    max_iterations: int = typer.Option(5, "--max-iterations", min=1, max=50,
                                       help="agent_max_iterations."),
    language: Language = typer.Option("auto", "--language",
                                      help="Prompt language; auto follows the question."),
    system: str = typer.Option("", "--system", help=SYSTEM_HELP),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Answer a question with an agent over the knowledge base, showing its trace.

    \b
    Examples:
      agentmodes ask "Wann hat die DG Agentur geöffnet?" --kb kb.db
      agentmodes ask "Who founded it and when?" --kb kb.db --mode react --task-type multihop
      echo "Wie erreiche ich die Agentur?" | agentmodes ask - --kb kb.db --quiet
      cat notes.md | agentmodes ask "Which points are still open?" - --kb kb.db
      agentmodes ask "..." --kb kb.db --json | jq -r 'select(.type == "done").full_response'
    """
    from ..agent import Agent
    from ..knowledge.base import KnowledgeBase
    from ..settings import ChatbotSettings

    output.set_quiet(quiet)
    question, history = question_and_context(question, context)
    settings = ChatbotSettings(agent_mode=mode, task_type=task_type, language=language,
                               agent_max_iterations=max_iterations, system_prompt=system)
    base = KnowledgeBase.open(kb_path(kb), create=False)
    try:
        agent = Agent(llm=_load_llm(llm), knowledge=base, settings=settings)
        events = agent.stream(question, history=history)
        if as_json:
            for event in events:
                output.emit_event(event)
        else:
            TraceView(quiet=output.quiet()).show(events)
    finally:
        base.close()


def question_and_context(question: str, context: Optional[str]) -> tuple[str, list]:
    """The question (from stdin for `-`) and the history turn holding piped context."""
    if context not in (None, output.STDIN):
        raise typer.BadParameter(f"only '-' (stdin as context) may follow the question, "
                                 f"not {context!r}", param_hint="[-]")
    if question == output.STDIN and context == output.STDIN:
        raise typer.BadParameter("stdin can be the question or the context, not both")
    question = output.argument_or_stdin(question, "the question")
    if not question.strip():
        raise fail("the question is empty: ask something, e.g. agentmodes ask \"Öffnungszeiten?\"")
    if context is None:
        return question, []
    text = output.read_stdin("the context")
    if len(text) > CONTEXT_MAX_CHARS:
        if not output.quiet():
            typer.echo(f"agentmodes: stdin context cut to its first {CONTEXT_MAX_CHARS} of "
                       f"{len(text)} characters", err=True)
        text = text[:CONTEXT_MAX_CHARS]
    return question, [("user", f"Context for my next question:\n\n{text.strip()}"),
                      ("assistant", "Understood. What is your question?")]


class TraceView:
    """Renders the event stream for a person: trace on stderr, answer on stdout."""

    def __init__(self, quiet: bool = False) -> None:
        from rich.console import Console
        # quiet: the trace goes nowhere; the answer and its sources still go to stdout.
        self.err = Console(stderr=True, highlight=False, soft_wrap=True, quiet=quiet)
        self.out = Console(highlight=False, soft_wrap=True)
        self.streaming: Optional[str] = None     # which delta kind is being printed
        self.at_line_start = True

    def show(self, events) -> None:
        for event in events:
            if event.get("done"):
                self._done(event)
            elif "status" in event:
                self._status(event)
            else:
                self.out.print(event["delta"], end="", markup=False)

    def _break(self) -> None:
        if self.streaming and not self.at_line_start:
            self.err.print()
        self.streaming = None

    def _status(self, e: dict) -> None:
        status, err = e["status"], self.err
        if status in ("reflection_delta", "thought_delta"):
            if self.streaming != status:
                self._break()
                err.print("[cyan]REFLECTION:[/] " if status == "reflection_delta"
                          else "[cyan]THOUGHT:[/] ", end="")
                self.streaming = status
            err.print(e["delta"], end="", style="italic", markup=False)
            self.at_line_start = e["delta"].endswith("\n")
            return
        if status in ("action_delta", "observation_delta"):
            return                                  # shown whole in the action/observation
        self._break()
        if status == "starting":
            err.print(f"[bold]{e['mode']}[/] · {e.get('goal', '')}", markup=True)
        elif status == "iteration":
            step = f" · plan step {e['plan_step']}: {e['plan_text']}" if "plan_step" in e else ""
            err.rule(f"Iteration {e['iteration']}/{e['max']}{step}", style="dim")
        elif status == "plan":
            err.print("[cyan]PLAN:[/]")
            for n, text in enumerate(e["plan"], start=1):
                err.print(f"  {n}. {text}", markup=False)
        elif status == "action":
            note = " [dim](answer without sources: searching first)[/]" if e.get("forced") else ""
            err.print(f"[yellow]ACTION:[/] {e['action']}("
                      f"{json.dumps(e['param'], ensure_ascii=False)}){note}")
        elif status == "observation":
            lines = e["result_preview"].splitlines()
            preview = "\n  ".join(lines[:4]) + ("\n  ..." if len(lines) > 4 else "")
            err.print("[green]OBSERVATION:[/]")
            err.print("  " + preview, style="dim", markup=False)
        elif status == "parse_error":
            err.print(f"[red]unreadable step[/] ({e['message']})"
                      + (": searching the question instead" if e.get("recovered") else ""))
        elif status == "repeated_action":
            err.print(f"[red]same action {e['count']} times in a row[/]: stopping")
        elif status == "adaptive_iteration":
            err.print(f"[magenta]high confidence ({e['confidence']:.2f})[/]: answering now")
        elif status == "max_iterations_reached":
            err.print(f"[red]iteration limit ({e['max']}) reached[/]: best-effort answer")
        elif status == "error":
            err.print(f"[red]error:[/] {e['message']}", markup=True)
        elif status == "final_answer":
            err.rule("Answer", style="dim")

    def _done(self, e: dict) -> None:
        self.out.print()
        cited = [s for s in e["sources"] if s.get("cited")] or e["sources"]
        if cited:
            self.out.print({"de": "\nQuellen:", "zh": "\n来源："}.get(_language(e), "\nSources:"))
            for s in cited:
                self.out.print(f"[{s['index']}] {s['title']} ({s['source']})", markup=False)
        usage = e.get("usage") or {}
        self.err.print(f"[dim]{e['iterations']} iteration(s), {usage.get('calls', 0)} LLM "
                       f"call(s), {usage.get('prompt_tokens', 0)}+"
                       f"{usage.get('completion_tokens', 0)} tokens, {e['elapsed_s']:.1f}s"
                       + (", adaptive exit" if e.get("adaptive_exit") else "") + "[/]")


def _language(done: dict) -> str:
    from ..prompts import detect_language
    return detect_language(done.get("goal") or "")
