"""ALFWorld (the 134 standard valid_unseen games) with ACT, ReAct and ReflAct, and Reflexion
on top: the setting in which the ReAct, ReflAct and Reflexion papers report.

Per game and mode the agent plays one episode of at most 50 commands (the ReAct notebook's
and the Reflexion code's limit) with the papers' two few-shot trajectories of the game's task
type. With `+reflexion`, a game is played in trials, trial-major as the Reflexion code runs
them (every unsolved game's trial 1, then trial 2, ...): a trial ends when it is won, when
seed 004's heuristic finds it stuck (the same invalid command at the same place more than 3
times in a row, or more than 30 commands), or at the limit; after a failed trial the model
writes a new plan (Reflexion's few-shot reflections), which the next trial reads with the
last 3 plans (k = 3), up to --trials trials.

Resumable at the grain of one game (one trial of one game for Reflexion): every finished one
is a line of the run log; Reflexion's plans are persisted in a SQLite memory beside it, so
an interrupted run continues where it stopped, with what it had learned. Each game (trial)
also gets a JSON log with its whole trajectory: every reasoning step, command and
observation, where the agent was, whether the command did anything, and the plan it wrote.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

from ..environments import alfworld_prompts
from ..environments.alfworld import ALFWorldEnv
from ..environments.alfworld_data import Game, load_games
from ..environments.fewshot import FewShot
from ..evaluators.game import GameEvaluator
from ..evaluators.heuristics import RuleHeuristic
from ..llm.base import ChatModel
from ..modes.act import ACT
from ..modes.environment import MAX_STEPS, EnvironmentActor, EnvironmentRun, play
from ..modes.react import REACT
from ..modes.reflact import REFLACT
from ..modes.reflexion import Reflexion
from ..store.memory import DEFAULT_K, ReflexionMemoryStore
from .codedata import data_root
from .runs import Job, RunLog, parse_names, results_dir, run_jobs, slug

MODES = {"act": ACT, "react": REACT, "reflact": REFLACT}
DEFAULT_TRIALS = 12      # the Reflexion paper: 130 of 134 games within 12 trials


@dataclass(slots=True)
class Setup:
    """What every game of one run shares."""

    llm: ChatModel
    llm_label: str
    fewshot: FewShot
    logs: Path                  # per-game trajectory logs
    memory: ReflexionMemoryStore
    max_steps: int = MAX_STEPS
    show_admissible: bool = False


def parse_variants(modes: str | Sequence[str], reflexion: bool) -> list[str]:
    """"act,react" (+ each on Reflexion with `reflexion`); a mode may also be named on
    Reflexion directly ("react,react+reflexion": Reflexion only over ReAct, as the paper)."""
    known = tuple(MODES) + tuple(f"{m}+reflexion" for m in MODES)
    names = parse_names(modes, known, "mode")
    plain = [n for n in names if "+" not in n]
    extra = [f"{m}+reflexion" for m in plain] if reflexion else []
    return list(dict.fromkeys(plain + [n for n in names if "+" in n] + extra))


def _system(setup: Setup, mode: str, game: Game) -> str:
    return alfworld_prompts.system_prompt(mode, game.task_type, setup.fewshot)


def _usage_fields(usage: Any) -> dict[str, int]:
    return {"llm_calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "cached_tokens": usage.cached_tokens}


def _record(game: Game, mode: str, run: EnvironmentRun, log: Path, **extra: Any) -> dict:
    return {"game": game.name, "task_type": game.task_type, "mode": mode, "won": run.won,
            "outcome": run.outcome, "env_steps": run.env_steps, "iterations": run.iterations,
            "feedback": run.feedback, **_usage_fields(run.usage), "log": str(log), **extra}


def _write_log(path: Path, game: Game, variant: str, run: EnvironmentRun, setup: Setup,
               **extra: Any) -> None:
    mode = variant.partition("+")[0]
    kind = "act" if mode == "act" else "react"
    data = {"game": game.name, "task_type": game.task_type, "variant": variant,
            "llm": setup.llm_label, "won": run.won, "outcome": run.outcome,
            "feedback": run.feedback, "env_steps": run.env_steps,
            "few_shot": [f"{kind}_{game.task_type}_1", f"{kind}_{game.task_type}_0"],
            **extra, "intro": run.intro, "steps": run.steps, "transcript": run.transcript(),
            "usage": run.usage.as_dict(), "elapsed_s": run.elapsed_s,
            "written": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _log_path(setup: Setup, variant: str, game: Game, trial: Optional[int] = None) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", game.name.replace("/", "--"))   # unique: whole
    return setup.logs / slug(variant) / (f"{name}.trial{trial}.json" if trial else f"{name}.json")


def play_game(setup: Setup, game: Game, mode: str) -> dict:
    """One episode of `mode` on `game`, logged; the run-log record."""
    with ALFWorldEnv(game.path) as env:
        run = play(MODES[mode], setup.llm, env, system=_system(setup, mode, game),
                   max_steps=setup.max_steps, show_admissible=setup.show_admissible)
    log = _log_path(setup, mode, game)
    _write_log(log, game, mode, run, setup)
    return _record(game, mode, run, log)


def memory_key(variant: str, game: Game) -> str:
    return f"alfworld:{variant}:{game.name}"


def reflexion_trial(setup: Setup, game: Game, variant: str, trial: int) -> dict:
    """Trial `trial` of Reflexion on `game`: Reflexion with one trial, whose memory (the last
    k plans of this game) persists in the run's store, so trials resume across processes."""
    mode = variant.partition("+")[0]
    key = memory_key(variant, game)
    lessons = setup.memory.load(key, DEFAULT_K)
    heuristic = RuleHeuristic()
    with ALFWorldEnv(game.path) as env:
        actor = EnvironmentActor(setup.llm, MODES[mode], env, system=_system(setup, mode, game),
                                 max_steps=setup.max_steps, stop_rule=heuristic.stuck,
                                 show_admissible=setup.show_admissible)
        fewshot = setup.fewshot
        reflexion = Reflexion(
            setup.llm, actor, GameEvaluator(heuristic), max_trials=1, memory=setup.memory,
            k=DEFAULT_K, language="en",
            reflection_prompt=lambda task, attempt, evaluation, past:
            alfworld_prompts.reflection_prompt(fewshot, attempt.trajectory,
                                               evaluation.feedback, past))
        result = reflexion.run(env.task, task_key=key)
    run = actor.runs[-1]
    reflection = result.trials[-1].reflection if result.trials else ""
    log = _log_path(setup, variant, game, trial)
    _write_log(log, game, variant, run, setup, trial=trial, memory=lessons,
               evaluation=result.trials[-1].evaluation if result.trials else {},
               reflection=reflection)
    # The reflection call is part of the trial's cost.
    return {**_record(game, mode, run, log, trial=trial, lessons_in=len(lessons),
                      reflection=reflection), **_usage_fields(result.usage)}


def _reflexion_jobs(variant: str, games: Sequence[Game], records: dict[str, dict],
                    trial: int) -> list[Job]:
    """Trial `trial` for every game whose earlier trials all finished without a win."""
    jobs = []
    for game in games:
        earlier = [records.get(f"{variant}::{game.name}#{t}") for t in range(1, trial)]
        if all(r is not None and not r.get("error") and not r.get("won") for r in earlier):
            jobs.append(Job(f"{game.name}#{trial}", variant, payload=(game, trial)))
    return jobs


def _fresh_memory(path: Path, fresh: bool) -> Path:
    if fresh and path.exists():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        shutil.move(str(path), str(path.with_name(f"{path.stem}.before-{stamp}{path.suffix}")))
    return path


def run_alfworld(llm: ChatModel, *, llm_label: str, variants: Sequence[str],
                 limit: Optional[int] = None, task_types: Optional[Sequence[str]] = None,
                 data_dir: Any = None, out_dir: Optional[Path] = None, fresh: bool = False,
                 trials: int = DEFAULT_TRIALS, max_steps: int = MAX_STEPS, workers: int = 1,
                 show_admissible: bool = False, cache_dir: Optional[Path] = None,
                 show_progress: bool = True):
    """Run the variants over the chosen games; returns (report, written paths)."""
    from .alfworld_report import build_report, write_report

    root = data_root(data_dir)
    games = load_games(root, task_types=task_types, limit=limit, cache_dir=cache_dir)
    fewshot = FewShot(root)
    out = results_dir(out_dir)
    base = out / "runs" / "alfworld"
    log = RunLog(base / f"{slug(llm_label)}.jsonl", fresh=fresh)
    memory = ReflexionMemoryStore(_fresh_memory(base / f"{slug(llm_label)}.memory.db", fresh))
    setup = Setup(llm, llm_label, fewshot, base / slug(llm_label), memory, max_steps,
                  show_admissible)
    by_name = {g.name: g for g in games}
    records: list[dict] = []
    try:
        plain = [v for v in variants if "+" not in v]
        jobs = [Job(g.name, v) for v in plain for g in games]
        if jobs:
            records += run_jobs(jobs, lambda job: play_game(setup, by_name[job.task_id],
                                                            job.variant),
                                log, workers=workers, description=f"alfworld ({llm_label})",
                                show_progress=show_progress)
        for variant in (v for v in variants if "+" in v):
            done: dict[str, dict] = {}
            for trial in range(1, trials + 1):
                jobs = _reflexion_jobs(variant, games, done, trial)
                if not jobs:
                    break
                for record in run_jobs(
                        jobs, lambda job: reflexion_trial(setup, job.payload[0], job.variant,
                                                          job.payload[1]),
                        log, workers=workers, show_progress=show_progress,
                        description=f"alfworld {variant} trial {trial} ({llm_label})"):
                    done[f"{record['variant']}::{record['task_id']}"] = record
            records += list(done.values())
    finally:
        memory.close()
    report = build_report(records, variants, games, llm_label=llm_label, trials=trials,
                          max_steps=max_steps, show_admissible=show_admissible)
    stem = f"alfworld_{slug(llm_label)}" + (f"_limit{limit}" if limit is not None else "")
    return report, write_report(report, out, stem)
