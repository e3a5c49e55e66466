"""A step mode (ACT, ReAct, ReflAct) playing in a text environment instead of searching.

    run = play(REACT, llm, ALFWorldEnv(game_file), system=alfworld_prompts.system_prompt(...))
    run.won, run.outcome, run.steps, run.usage

The episode is the loop of loop.py, unchanged: the same iterations, streamed events, parse
feedback and usage. What differs is injected (environments/toolbox.py) or overridden here:

- the ACTION is the environment's command (the parser reads it whole);
- the game ends the episode: won or lost, or a stop rule (seed 004's heuristic) that finds
  the agent stuck; a FINAL ANSWER only says the model thinks it is done;
- there is no answer to write: the episode ends with the done event at once (no extra LLM
  call at the step limit), carrying `won`, the outcome and the steps;
- no knowledge-base rules: no forced search, no adaptive exit, no repeat cut-off (repeats
  are the heuristic's to judge), no native tool calls (the papers' text steps).

EnvironmentActor is the same as Reflexion's actor (modes/actors.py protocol): each trial
resets the game and plays it with the lessons so far in the task message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional, Sequence

from .. import prompts
from ..environments.alfworld_prompts import task_message as default_task_message
from ..environments.alfworld_prompts import transcript
from ..environments.base import Environment
from ..environments.toolbox import EnvironmentToolbox, StopRule
from ..events import Event, Usage
from ..llm.base import ChatModel
from ..parsing import HINT_COMMAND, Step, parse_step
from .loop import Episode
from .self_correction import Attempt
from .spec import ModeSpec

MAX_STEPS = 50          # the ReAct notebook and the Reflexion code allow 49 actions


def command_grammar_for(spec: ModeSpec, llm: ChatModel) -> Optional[str]:
    if not getattr(llm, "supports_grammar", False):
        return None
    from ..llm.grammars import command_grammar
    return command_grammar(spec.name)


class EnvironmentEpisode(Episode):
    """One episode of a step mode in an environment; `run()` yields the loop's events."""

    def __init__(self, spec: ModeSpec, llm: ChatModel, env: Environment, *, system: str,
                 task: str, max_steps: int = MAX_STEPS, stop_rule: Optional[StopRule] = None,
                 show_admissible: bool = False, grammar: Optional[str] = None):
        self.environment = env
        self.toolbox = EnvironmentToolbox(env, stop_rule=stop_rule,
                                          show_admissible=show_admissible)
        super().__init__(replace(spec, native_tools=False, search_first=False), llm,
                         self.toolbox, question=task, system=system, max_iterations=max_steps,
                         lang="en", adaptive=False, grammar=grammar, require_search=False,
                         repeat_limit=None)
        self.done_event: dict = {}

    def _parse(self, text: str) -> Step:
        return parse_step(text, reflact=self.spec.reflact_labels, command=self.environment.name)

    def _gathered(self) -> bool:
        return bool(self.toolbox.trajectory)

    def _feed_back(self, step: Step, it: int) -> Event:
        """An unreadable step: say how a command is written (not the KB's tool syntax)."""
        err = step.error
        self.messages.append({"role": "user", "content": prompts.fill(
            prompts.load("parse_error", "en"), MESSAGE=err.message, HINT=HINT_COMMAND)})
        return {"status": "parse_error", "iteration": it, "message": err.message,
                "hint": HINT_COMMAND, "recovered": False, "usage": self.last_usage}

    # -- how the episode ends (instead of writing an answer) ------------------------------------
    def _finish(self, answer: str, it: int) -> Iterator[Event]:
        yield self._end(self.toolbox.outcome or "final_answer")

    def _final_call(self, reason: str) -> Iterator[Event]:
        yield self._end(reason)

    def _end(self, reason: str) -> Event:
        transitions = self.toolbox.transitions
        last = transitions[-1].observation if transitions else ""
        self.done_event = {
            "done": True, "full_response": last, "sources": [], "goal": self.goal,
            "mode": self.spec.name, "environment": self.environment.name,
            "won": self.toolbox.won, "outcome": reason, "feedback": self.toolbox.feedback,
            "iterations": self.iterations, "env_steps": len(transitions),
            "adaptive_exit": False, "usage": self.usage.as_dict(),
            "elapsed_s": round(time.perf_counter() - self.started, 6)}
        return self.done_event

    def records(self) -> list[dict]:
        """The finished steps with full observations, effect and location (the loop's
        `steps` preview observations to a few hundred characters)."""
        out, transitions = [], iter(self.toolbox.transitions)
        for step in self.steps:
            record = dict(step)
            if "param" in record:
                t = next(transitions, None)
                if t is not None:
                    record.update(observation=t.observation, effect=t.effect,
                                  location=t.location, done=t.done, won=t.won)
            record.pop("action", None)          # always the environment's name
            out.append(record)
        return out


@dataclass(slots=True)
class EnvironmentRun:
    """One finished episode: what a benchmark logs and what Reflexion judges."""

    won: bool
    outcome: str                   # won | lost | stuck | max_iterations | final_answer | ...
    intro: str                     # the first observation (room and task)
    steps: list[dict]              # reasoning, command (param), observation, effect, location
    trajectory: list[tuple[str, Optional[str], bool]]    # for the rule heuristic
    usage: Usage
    iterations: int
    elapsed_s: float
    feedback: str = ""
    events: list[Event] = field(default_factory=list)

    @property
    def env_steps(self) -> int:
        return len(self.trajectory)

    def transcript(self) -> str:
        return transcript(self.intro, self.steps)

    def summary(self) -> str:
        state = "won" if self.won else f"not won ({self.outcome})"
        return f"{state} after {self.env_steps} commands"


def play(spec: ModeSpec, llm: ChatModel, env: Environment, *, system: str,
         lessons: Sequence[str] = (), max_steps: int = MAX_STEPS,
         stop_rule: Optional[StopRule] = None, show_admissible: bool = False,
         task_message: Callable[..., str] = default_task_message,
         on_event: Optional[Callable[[Event], None]] = None) -> EnvironmentRun:
    """Reset the environment and play one episode to its end."""
    intro = env.reset()
    episode = EnvironmentEpisode(spec, llm, env, system=system,
                                 task=task_message(intro, lessons), max_steps=max_steps,
                                 stop_rule=stop_rule, show_admissible=show_admissible,
                                 grammar=command_grammar_for(spec, llm))
    events: list[Event] = []
    for event in episode.run():
        if on_event is not None:
            on_event(event)
        if "delta" not in event and not event.get("done"):
            events.append(event)
    done = episode.done_event
    return EnvironmentRun(won=bool(done.get("won")), outcome=str(done.get("outcome")),
                          intro=intro, steps=episode.records(),
                          trajectory=list(episode.toolbox.trajectory), usage=episode.usage,
                          iterations=episode.iterations,
                          elapsed_s=float(done.get("elapsed_s", 0.0)),
                          feedback=episode.toolbox.feedback, events=events)


@dataclass
class EnvironmentActor:
    """Reflexion's actor in an environment: every trial replays the game from its start,
    with the lessons (the last k reflections) in the task message."""

    llm: ChatModel
    spec: ModeSpec
    env: Environment
    system: str
    max_steps: int = MAX_STEPS
    stop_rule: Optional[StopRule] = None
    show_admissible: bool = False
    task_message: Callable[..., str] = default_task_message
    on_event: Optional[Callable[[Event], None]] = None
    kind: str = "text"
    runs: list[EnvironmentRun] = field(default_factory=list)

    def act(self, task: str, lessons: Sequence[str] = (), previous: Any = None) -> Attempt:
        run = play(self.spec, self.llm, self.env, system=self.system, lessons=lessons,
                   max_steps=self.max_steps, stop_rule=self.stop_rule,
                   show_admissible=self.show_admissible, task_message=self.task_message,
                   on_event=self.on_event)
        self.runs.append(run)
        return Attempt(output=run.summary(), usage=run.usage, trajectory=run.transcript(),
                       run=run)
