"""`agentmodes ask "question"`: one agent run from the command line.

The live trace (iterations, reflection or thought streaming in, actions, observation
previews) goes to stderr; the answer and its numbered sources go to stdout, so
`agentmodes ask ... > answer.txt` keeps just the answer. `--json` prints every event as
one JSON line on stdout instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from .kb_commands import KB_HELP, kb_path
from .main import app, fail

MODES = ("act", "react", "reflact")
TASK_TYPES = ("lookup", "multihop")


def _load_llm(spec: Optional[str]) -> Any:
    from ..llm.registry import load_llm    # llama.cpp loads only when a run needs it
    return load_llm(spec)


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question to answer from the documents."),
    kb: Optional[Path] = typer.Option(None, "--kb", help=KB_HELP),
    mode: str = typer.Option("reflact", "--mode", help="act | react | reflact"),
    task_type: str = typer.Option("lookup", "--task-type",
                                  help="lookup | multihop (multihop: up to max+2 iterations)"),
    llm: Optional[str] = typer.Option(None, "--llm", help=(
        "local (default, embedded model) | GGUF_PATH | openai:MODEL; default $AGENTMODES_LLM")),
    max_iterations: int = typer.Option(5, "--max-iterations", help="agent_max_iterations"),
    language: str = typer.Option("auto", "--language", help="auto | de | en | zh (prompt language)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON event per line."),
) -> None:
    """Answer a question with an agent over the knowledge base, showing its trace."""
    from ..agent import Agent
    from ..knowledge.base import KnowledgeBase
    from ..settings import ChatbotSettings

    if not question.strip():
        raise fail("the question is empty: ask something, e.g. agentmodes ask \"Öffnungszeiten?\"")
    if mode.lower() not in MODES:
        raise fail(f"unknown mode {mode!r} (choose {', '.join(MODES)})")
    if task_type.lower() not in TASK_TYPES:
        raise fail(f"unknown task type {task_type!r} (choose {', '.join(TASK_TYPES)})")
    if not 1 <= max_iterations <= 50:
        raise fail("--max-iterations must be between 1 and 50")
    if language not in ("auto", "de", "en", "zh"):
        raise fail(f"unknown language {language!r} (choose auto, de, en or zh)")
    settings = ChatbotSettings(agent_mode=mode, task_type=task_type, language=language,
                               agent_max_iterations=max_iterations)
    base = KnowledgeBase.open(kb_path(kb), create=False)
    try:
        agent = Agent(llm=_load_llm(llm), knowledge=base, settings=settings)
        events = agent.stream(question)
        if as_json:
            for event in events:
                typer.echo(json.dumps(event, ensure_ascii=False, default=str))
        else:
            TraceView().show(events)
    finally:
        base.close()


class TraceView:
    """Renders the event stream for a person: trace on stderr, answer on stdout."""

    def __init__(self) -> None:
        from rich.console import Console
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
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
            err.rule(f"Iteration {e['iteration']}/{e['max']}", style="dim")
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
