"""`agentmodes bench prefix-reuse` and `agentmodes bench wellformed`: the embedded model's KV
prefix reuse and step grammars (bench/embedded.py), written under --out (bench/results.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..bench.results import results_dir, write_results
from . import output
from .bench_commands import wrote
from .bench_options import DATA_OPTION, OUT_OPTION
from .main import bench_app, fail

MODEL_HELP = "A GGUF file (default: the embedded SmolLM2-135M-Instruct)."


def _write(out_dir: Optional[Path], stem: str, report: dict, markdown: str) -> None:
    wrote(*write_results(results_dir(out_dir), stem, report, markdown))
    typer.echo(markdown)


def _questions(data: Optional[Path], limit: int) -> list:
    from ..bench.hotpotqa import load_questions

    if limit < 1:
        raise fail("--limit must be at least 1")
    return load_questions(data)[:limit]


@bench_app.command("prefix-reuse")
def prefix_reuse(
    iterations: int = typer.Option(4, "--iterations", help="ReflAct iterations in the episode."),
    question: int = typer.Option(0, "--question", help="Index of the HotpotQA question."),
    max_tokens: int = typer.Option(160, "--max-tokens", help="Token budget of each step."),
    model: Optional[Path] = typer.Option(None, "--model", help=MODEL_HELP),
    data: Optional[Path] = DATA_OPTION,
    out_dir: Optional[Path] = OUT_OPTION,
) -> None:
    """Prompt tokens evaluated and time of a ReflAct episode, with and without prefix reuse."""
    from ..bench.embedded import prefix_reuse_markdown, run_prefix_reuse

    if iterations < 2:
        raise fail("--iterations must be at least 2 (reuse starts at the second)")
    questions = _questions(data, question + 1)
    if question >= len(questions) or question < 0:
        raise fail(f"--question must be between 0 and {len(questions) - 1}")
    report = run_prefix_reuse(questions[question], iterations=iterations, max_tokens=max_tokens,
                              model_path=str(model) if model else None,
                              progress=lambda name: output.quiet() or typer.echo(
                                  f"running {name} ...", err=True))
    _write(out_dir, "embedded_prefix_reuse", report, prefix_reuse_markdown(report))


@bench_app.command("wellformed")
def wellformed(
    mode: str = typer.Option("reflact", "--mode", help="act | react | reflact"),
    limit: int = typer.Option(100, "--limit", help="How many HotpotQA questions."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Token budget of the step."),
    model: Optional[Path] = typer.Option(None, "--model", help=MODEL_HELP),
    data: Optional[Path] = DATA_OPTION,
    out_dir: Optional[Path] = OUT_OPTION,
) -> None:
    """Share of first steps that parse, with and without the mode's grammar."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from ..bench.embedded import STRICT, run_wellformed, wellformed_markdown

    if mode not in STRICT:
        raise fail(f"--mode must be one of {', '.join(STRICT)}")
    questions = _questions(data, limit)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True,
                  disable=output.quiet()) as bar:
        job = bar.add_task(f"first {mode} steps", total=2 * len(questions))
        report = run_wellformed(questions, mode=mode, max_tokens=max_tokens,
                                model_path=str(model) if model else None,
                                progress=lambda done, total: bar.update(job, completed=done))
    stem = "embedded_wellformed" if mode == "reflact" else f"embedded_wellformed_{mode}"
    _write(out_dir, stem, report, wellformed_markdown(report))
