"""ALFWorld (Shridhar et al. 2021), text-only: one household game as an Environment.

    env = ALFWorldEnv("…/valid_unseen/pick_cool_then_place_in_recep-Tomato-None-Microwave-10/"
                      "trial_T20190909_102710_795182/game.tw-pddl")
    obs = env.reset()                       # the room and "Your task is to: ..."
    obs, done, won = env.step("go to fridge 1")

The game runs in TextWorld's PDDL engine with ALFWorld's wrappers, as ALFWorld's own
AlfredTWEnv runs it (objects named "tomato 2", not "Tomato_bar__minus_01"), one game per
instance instead of a batch: the benchmark needs to know which game it plays, and Reflexion
replays the same game trial after trial (`reset()` reuses the loaded game).

Observations are cleaned as the ReAct and Reflexion code cleans them: the welcome banner is
dropped at reset and "You arrive at loc 12. " is cut from arrivals. A ReAct-paper style
`think: ...` command is answered "OK." without reaching the game, as the papers' loop does.

Games may be played from several threads (a benchmark against an HTTP model): calls into
the engine are serialised by one process-wide lock, since TextWorld's PDDL engine and its
planner library are not documented as thread-safe; a command takes well under a second, so
the lock costs little next to the model.

Requires the optional `alfworld` package (`pip install agentmodes[alfworld]`); it is
imported when a game is first loaded, so importing this module never fails.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any, Optional

from ..errors import AgentModesError
from .alfworld_data import task_type_of
from .base import Transition

NOTHING_HAPPENS = "Nothing happens."
THINK_REPLY = "OK."
_ARRIVAL = re.compile(r"^You arrive at loc \d+\.\s*")
_GO_TO = re.compile(r"^go to (?P<place>.+)$")
START_LOCATION = "the middle of the room"
_ENGINE = threading.Lock()


class ALFWorldUnavailable(AgentModesError):
    """The alfworld package (the game engine) is not installed."""


def engine_available() -> bool:
    """True when the game engine can be imported (the `alfworld` extra is installed)."""
    try:
        import alfworld.agents.environment.alfred_tw_env  # noqa: F401
        import textworld  # noqa: F401
    except ImportError:
        return False
    return True


def clean_observation(text: str) -> str:
    """An observation as the papers' agents read it."""
    return _ARRIVAL.sub("", text.strip())


def initial_observation(feedback: str) -> str:
    """The first observation without ALFWorld's welcome banner (ReAct's `split('\\n\\n')[1:]`)."""
    parts = feedback.strip().split("\n\n")
    return "\n".join(parts[1:]) if len(parts) > 1 else feedback.strip()


def normalise_command(action: str) -> str:
    """One command line as the game's parser expects it: first line, single spaces, no
    trailing full stop or quotes. Models often write `put mug 1 in coffeemachine 1`; the
    game only knows `in/on`, so both prepositions are mapped (as MPO/ETO's parser does)."""
    line = (action or "").strip().splitlines()[0] if (action or "").strip() else ""
    line = " ".join(line.strip().strip("`\"'").split()).rstrip(".")
    m = re.match(r"^put (?P<obj>.+?) (?:in|on|into|onto|in/on) (?P<recep>.+)$", line)
    if m and " in/on " not in line:
        line = f"put {m['obj']} in/on {m['recep']}"
    return line


class ALFWorldEnv:
    """One ALFWorld game. `reset() -> str`, `step(action) -> (observation, done, won)`."""

    name = "alfworld"

    def __init__(self, game_file: str | os.PathLike):
        self.game_file = Path(game_file)
        if not self.game_file.is_file():
            raise AgentModesError(f"ALFWorld game file not found: {self.game_file}")
        self._env: Any = None
        self._state: Any = None
        self.location: Optional[str] = None
        self._task = ""
        self.steps = 0
        self.won = False
        self.done = False

    @property
    def task_type(self) -> str:
        """put | clean | heat | cool | examine | puttwo (the ReAct paper's prompt names)."""
        return task_type_of(self.game_file.parent.parent.name)

    @property
    def task(self) -> str:
        """The task sentence ("put a cool tomato in microwave."), known before reset: it is
        read from the game file's text grammar, where ALFWorld writes it."""
        if not self._task:
            try:
                text = self.game_file.read_text(encoding="utf-8")
            except OSError as err:
                raise AgentModesError(f"cannot read the ALFWorld game {self.game_file}: "
                                      f"{err}") from err
            m = re.search(r"Your task is to: (.+?)\\?\"", text)
            self._task = m.group(1).strip() if m else ""
        return self._task

    @property
    def game_name(self) -> str:
        return f"{self.game_file.parent.parent.name}/{self.game_file.parent.name}"

    # -- the game engine ----------------------------------------------------------------------
    def _load(self) -> Any:
        if self._env is not None:
            return self._env
        # alfworld creates $ALFWORLD_DATA (default ~/.cache/alfworld) on import: point it at
        # the folder the games already live in instead of the user's home.
        parents = self.game_file.parents
        in_layout = len(parents) > 4 and parents[3].name == "json_2.1.1"
        os.environ.setdefault("ALFWORLD_DATA",
                              str(parents[4] if in_layout else self.game_file.parent))
        try:
            import textworld
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        except ImportError as err:
            raise ALFWorldUnavailable(
                f"the ALFWorld game engine is not installed ({err.name or err}): "
                "pip install 'agentmodes[alfworld]' (or: bash scripts/setup)") from None
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        try:
            with _ENGINE:
                self._env = textworld.start(str(self.game_file), request_infos=infos,
                                            wrappers=[AlfredDemangler(), AlfredInfos])
        except Exception as err:  # noqa: BLE001 - the engine's errors are not typed
            raise AgentModesError(f"cannot load the ALFWorld game {self.game_file}: "
                                  f"{type(err).__name__}: {err}") from err
        return self._env

    # -- the Environment protocol -------------------------------------------------------------
    def reset(self) -> str:
        """Start the game from its initial state; the room and the task."""
        env = self._load()
        with _ENGINE:
            self._state = env.reset()
        observation = initial_observation(str(self._state["feedback"]))
        self._task = _task_of(observation) or self._task
        self.location = START_LOCATION
        self.steps, self.won, self.done = 0, False, False
        return observation

    def act(self, action: str) -> Transition:
        if self._state is None:
            raise AgentModesError("ALFWorldEnv.act() before reset(): call reset() first")
        raw = (action or "").strip()
        if raw.lower().startswith("think:"):
            return Transition(THINK_REPLY, self.done, self.won, True, self.location,
                              self.admissible_actions())
        command = normalise_command(raw)
        if self.done:
            return Transition("The game is over.", True, self.won, False, self.location)
        with _ENGINE:
            self._state, _, done = self._env.step(command)
        self.steps += 1
        observation = clean_observation(str(self._state["feedback"]))
        effect = observation != NOTHING_HAPPENS
        m = _GO_TO.match(command)
        if effect and m:
            self.location = m["place"]
        self.won = bool(self._state.get("won"))
        self.done = bool(done) or self.won
        return Transition(observation, self.done, self.won, effect, self.location,
                          self.admissible_actions())

    def step(self, action: str) -> tuple[str, bool, bool]:
        t = self.act(action)
        return t.observation, t.done, t.won

    def admissible_actions(self) -> Optional[list[str]]:
        if self._state is None:
            return None
        commands = self._state.get("admissible_commands")
        return list(commands) if commands is not None else None

    def walkthrough(self) -> list[str]:
        """A winning command sequence from the initial state, planned by the game's own PDDL
        planner (fast-downward) on a separate copy of the game; for tests and demos."""
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        self._load()                                   # clear error if not installed
        infos = textworld.EnvInfos(policy_commands=True)
        with _ENGINE:
            planner = textworld.start(str(self.game_file), request_infos=infos,
                                      wrappers=[AlfredDemangler(), AlfredInfos])
            try:
                return list(planner.reset()["policy_commands"] or [])
            finally:
                planner.close()

    def close(self) -> None:
        if self._env is not None:
            with _ENGINE:
                self._env.close()
            self._env = None
            self._state = None

    def __enter__(self) -> "ALFWorldEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _task_of(observation: str) -> str:
    m = re.search(r"Your task is to:\s*(.+)", observation)
    return m.group(1).strip() if m else ""
