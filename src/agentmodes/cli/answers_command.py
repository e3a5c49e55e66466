"""`agentmodes bench answers`: end-to-end answers on QA sets with gold (bench/answers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import output
from .bench_llm_commands import LLM_HELP, _finish, llm_spec
from .bench_options import DATA_OPTION, FRESH_OPTION, OUT_OPTION
from .main import bench_app


@bench_app.command("answers")
def answers(
    datasets: str = typer.Option("xquad-en,hotpotqa", "--datasets",
                                 help="Comma-separated: xquad-en, hotpotqa."),
    modes: str = typer.Option("reflact", "--modes", help="Comma-separated agent modes."),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                        help="N questions per set, spread evenly over it."),
    out: Optional[Path] = OUT_OPTION,
    fresh: bool = FRESH_OPTION,
    recompose: bool = typer.Option(False, "--recompose", help=(
        "Score the logged model answers with the current composer (no new LLM calls for "
        "finished questions).")),
    shard: str = typer.Option("0/1", "--shard", help=(
        "K/N: run every N-th question from the K-th (0-based), so N processes share one "
        "run log; a run without --shard then writes the report.")),
    logged_only: bool = typer.Option(False, "--logged-only", help=(
        "Report on the questions the run log already has; run nothing (a partial run).")),
    split: str = typer.Option("bench", "--split", help=(
        "bench: the reported sample; calibration: questions outside the 240-question bench "
        "sample (the composer's lead margin is fitted on these).")),
    data: Optional[Path] = DATA_OPTION,
    json_out: bool = typer.Option(False, "--json", help=output.JSON_HELP),
) -> None:
    """Answers through Agent.run on XQuAD-en and HotpotQA: the model's own, composed,
    extractive-only and a BM25-top-sentence baseline, side by side.

    \b
    Examples:
      agentmodes bench answers --datasets xquad-en --limit 20
      agentmodes bench answers --llm openai:gpt-4o-mini --modes act,reflact
    """
    from ..bench.answer_data import DATASETS, SPLITS, load_qa
    from ..bench.answers import run_answers
    from ..bench.hotpotqa import MODES
    from ..bench.runs import parse_names
    from ..llm.registry import load_llm

    sets = parse_names(datasets, DATASETS, "dataset")
    try:
        k, n = (int(x) for x in shard.split("/"))
        if not 0 <= k < n:
            raise ValueError
    except ValueError:
        raise typer.BadParameter(f"--shard takes K/N with 0 <= K < N, not {shard!r}") from None
    mode_names = parse_names(modes, MODES, "mode")
    split = parse_names(split, SPLITS, "split")[0]
    for name in sets:
        load_qa(name, data)                      # bad data fails before the model loads
    spec = llm_spec(llm)
    for report, paths in run_answers(None if logged_only else load_llm(spec), llm_label=spec, datasets=sets,
                                     modes=mode_names, limit=limit, data_dir=data,
                                     out_dir=out, recompose=recompose,
                                     show_progress=not (json_out or output.quiet()),
                                     shard=(k, n), fresh=fresh, logged_only=logged_only,
                                     split=split):
        _finish(report, paths, json_out)
