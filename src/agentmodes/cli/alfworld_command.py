"""`agentmodes bench alfworld`: the papers' ALFWorld setting on the command line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from . import output
from .bench_llm_commands import LLM_HELP, _finish, effective_workers, llm_spec
from .bench_options import DATA_OPTION, FRESH_OPTION, OUT_OPTION
from .main import bench_app

# Two few-shot trajectories and up to 50 steps need more than the embedded model's default
# 4,096-token context; SmolLM2 was trained with 8,192.
EMBEDDED_CONTEXT = "8192"


@bench_app.command("alfworld")
def alfworld(
    modes: str = typer.Option("act,react,reflact", "--modes", help="Comma-separated step "
                              "modes: act, react, reflact; a mode on Reflexion as "
                              "react+reflexion."),
    reflexion: bool = typer.Option(False, "--reflexion", help="Also run each mode as "
                                   "Reflexion's actor (seed 004's heuristic as evaluator)."),
    trials: int = typer.Option(12, "--trials", min=1, max=20, help="Reflexion: trials per "
                               "game (the paper reports 130/134 within 12)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="First N games, "
                                        "round-robin over the task types."),
    task_types: Optional[str] = typer.Option(None, "--task-types", help="Comma-separated: "
                                             "put, clean, heat, cool, examine, puttwo "
                                             "(or the papers' Pick, Clean, ..., Look, Pick 2)."),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    workers: int = typer.Option(1, "--workers", min=1, help="Games in parallel (HTTP "
                                "backends only)."),
    max_steps: int = typer.Option(50, "--max-steps", min=1, max=200, help="Commands per "
                                  "episode (the papers' code: 50)."),
    admissible: bool = typer.Option(False, "--admissible", help="Show the admissible "
                                    "commands after each observation (not the papers' setting)."),
    data: Optional[Path] = DATA_OPTION,
    json_out: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    out: Optional[Path] = OUT_OPTION,
    fresh: bool = FRESH_OPTION,
) -> None:
    """ALFWorld, the 134 standard games: success per task type, steps, tokens and time per
    mode, next to the ReAct, ReflAct and Reflexion papers' figures.

    \b
    Examples:
      agentmodes bench alfworld --modes react --limit 6
      agentmodes bench alfworld --modes react --reflexion --trials 12 --llm openai:gpt-4o
    """
    from ..bench.alfworld import parse_variants, run_alfworld
    from ..bench.codedata import data_root
    from ..environments.alfworld import ALFWorldUnavailable, engine_available
    from ..environments.alfworld_data import load_games, parse_task_types
    from ..environments.fewshot import FewShot
    from ..llm.registry import load_llm

    variants = parse_variants(modes, reflexion)
    types = parse_task_types(task_types)
    if not engine_available():
        raise ALFWorldUnavailable("the ALFWorld game engine is not installed: "
                                  "pip install -e '.[alfworld]' (or: bash scripts/setup)")
    root = data_root(data)                        # bad data fails before the model loads
    load_games(root, task_types=types, limit=limit)
    FewShot(root)
    spec = llm_spec(llm)
    if not spec.startswith(("openai:", "scripted:")):
        os.environ.setdefault("AGENTMODES_N_CTX", EMBEDDED_CONTEXT)
    model = load_llm(spec)
    report, paths = run_alfworld(model, llm_label=spec, variants=variants, limit=limit,
                                 task_types=types, data_dir=data, out_dir=out, fresh=fresh,
                                 trials=trials, max_steps=max_steps,
                                 workers=effective_workers(spec, workers),
                                 show_admissible=admissible,
                                 show_progress=not (json_out or output.quiet()))
    _finish(report, paths, json_out)
