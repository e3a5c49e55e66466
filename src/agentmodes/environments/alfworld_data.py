"""The ALFWorld games: where they are, which ones count, and their task types.

The shared data folder holds the games as one tar (`alfworld/json_2.1.1_valid_all_splits.tar.gz`,
its README says so); the game engine needs them as files. `games_root()` extracts the tar
once into a cache folder outside the project (or uses `$ALFWORLD_DATA` when it already holds
an extracted copy) and later calls reuse it.

The standard evaluation set is the 134 solvable games of `valid_unseen`, chosen exactly as
ALFWorld's own AlfredTWEnv chooses them (no movable-receptacle or sliced-object tasks, the
game file marked solvable): the ReAct, Reflexion and ReflAct papers all report on these.
Their six task types carry the ReAct paper's prompt names (put, clean, heat, cool, examine,
puttwo); `ordered()` interleaves them so that any `--limit` samples every type.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..errors import AgentModesError, ConfigError

TAR_NAME = "json_2.1.1_valid_all_splits.tar.gz"
SPLITS = ("valid_unseen", "valid_seen", "valid_train")
# Game folder prefix -> the ReAct paper's prompt name for the task type (its notebook's
# `prefixes`), in the order of the papers' tables.
TASK_TYPES = {"pick_and_place": "put", "pick_clean_then_place": "clean",
              "pick_heat_then_place": "heat", "pick_cool_then_place": "cool",
              "look_at_obj": "examine", "pick_two_obj": "puttwo"}
TYPE_NAMES = tuple(TASK_TYPES.values())
# The papers' column titles for the task types.
TYPE_TITLES = {"put": "Pick", "clean": "Clean", "heat": "Heat", "cool": "Cool",
               "examine": "Look", "puttwo": "Pick 2"}
_STAMP = ".agentmodes-extracted"


class GameDataError(AgentModesError):
    """The ALFWorld games are missing, unreadable or not what was asked for."""


@dataclass(frozen=True, slots=True)
class Game:
    """One ALFWorld game: its file, its task folder and its task type."""

    path: Path                  # .../<task folder>/<trial>/game.tw-pddl
    split: str

    @property
    def name(self) -> str:
        """"<task folder>/<trial>": unique and stable across machines."""
        return f"{self.path.parent.parent.name}/{self.path.parent.name}"

    @property
    def task_type(self) -> str:
        return task_type_of(self.path.parent.parent.name)


def task_type_of(folder: str) -> str:
    for prefix, name in TASK_TYPES.items():
        if folder.startswith(prefix):
            return name
    raise GameDataError(f"not an ALFWorld task folder (unknown task type): {folder}")


def parse_task_types(text: str | Sequence[str] | None) -> list[str]:
    """A comma-separated choice of task types; the papers' titles (Pick, Look, ...) and the
    game folder prefixes are accepted too."""
    if not text:
        return list(TYPE_NAMES)
    items = text.split(",") if isinstance(text, str) else list(text)
    aliases = {**{t.lower(): t for t in TYPE_NAMES},
               **{v.lower().replace(" ", ""): k for k, v in TYPE_TITLES.items()},
               **{k: v for k, v in TASK_TYPES.items()}}
    out = []
    for item in items:
        key = item.strip().lower().replace(" ", "")
        if not key:
            continue
        if key not in aliases:
            raise ConfigError(f"unknown ALFWorld task type {item.strip()!r}; use "
                            f"{', '.join(TYPE_NAMES)} (comma-separated)")
        out.append(aliases[key])
    return list(dict.fromkeys(out)) or list(TYPE_NAMES)


def default_cache_dir() -> Path:
    base = os.environ.get("AGENTMODES_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "agentmodes")
    return Path(base) / "alfworld"


def _extracted(root: Path) -> bool:
    return (root / "json_2.1.1" / "valid_unseen").is_dir()


def games_root(data_dir: Optional[str | Path], cache_dir: Optional[str | Path] = None) -> Path:
    """A folder holding `json_2.1.1/<split>/...`: $ALFWORLD_DATA if it is one, else the tar
    of the shared data folder `data_dir` extracted (once) into `cache_dir` (default
    ~/.cache/agentmodes/alfworld)."""
    given = os.environ.get("ALFWORLD_DATA")
    if cache_dir is None and given and _extracted(Path(given)):
        return Path(given)
    if data_dir is None:
        raise GameDataError("no ALFWorld data: set ALFWORLD_DATA to an extracted copy or "
                            "pass the shared data folder (--data DIR)")
    tar = Path(data_dir) / "alfworld" / TAR_NAME
    if not tar.is_file():
        raise GameDataError(f"ALFWorld data not found: {tar}")
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    stamp = root / _STAMP
    signature = f"{tar.stat().st_size}:{int(tar.stat().st_mtime)}"
    if _extracted(root) and stamp.is_file() and stamp.read_text().strip() == signature:
        return root
    root.mkdir(parents=True, exist_ok=True)
    # Extract next to the target and rename, so an interrupted extraction is never taken
    # for a complete one.
    with tempfile.TemporaryDirectory(dir=root, prefix=".extract-") as tmp:
        try:
            with tarfile.open(tar, "r:gz") as archive:
                archive.extractall(tmp, filter="data")
        except (OSError, tarfile.TarError) as err:
            raise GameDataError(f"cannot extract {tar}: {err}") from err
        target = root / "json_2.1.1"
        if target.exists():
            shutil.rmtree(target)
        os.replace(Path(tmp) / "json_2.1.1", target)
    stamp.write_text(signature + "\n")
    return root


def solvable_games(root: Path, split: str = "valid_unseen") -> list[Game]:
    """The games AlfredTWEnv would load for `split` (134 for valid_unseen), sorted by name."""
    if split not in SPLITS:
        raise ConfigError(f"unknown ALFWorld split {split!r}; use {', '.join(SPLITS)}")
    base = Path(root) / "json_2.1.1" / split
    if not base.is_dir():
        raise GameDataError(f"ALFWorld split folder not found: {base}")
    games = []
    for game_file in base.glob("*/*/game.tw-pddl"):
        folder = game_file.parent.parent.name
        if "movable" in folder or "Sliced" in folder:
            continue                           # not supported by ALFWorld's text engine
        if not any(folder.startswith(p) for p in TASK_TYPES):
            continue
        try:
            solvable = json.loads(game_file.read_text(encoding="utf-8")).get("solvable")
        except (OSError, ValueError) as err:
            raise GameDataError(f"unreadable ALFWorld game {game_file}: {err}") from err
        if solvable is True:
            games.append(Game(game_file, split))
    return sorted(games, key=lambda g: g.name)


def ordered(games: Iterable[Game], task_types: Optional[Sequence[str]] = None) -> list[Game]:
    """Games of the chosen types, round-robin over the types in the papers' order (put,
    clean, heat, cool, examine, puttwo), each type's games by name."""
    wanted = list(task_types or TYPE_NAMES)
    by_type: dict[str, list[Game]] = {t: [] for t in TYPE_NAMES if t in wanted}
    for game in games:
        if game.task_type in by_type:
            by_type[game.task_type].append(game)
    out: list[Game] = []
    queues = [sorted(v, key=lambda g: g.name) for v in by_type.values()]
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


def load_games(data_dir: Optional[str | Path], *, split: str = "valid_unseen",
               task_types: Optional[Sequence[str]] = None, limit: Optional[int] = None,
               cache_dir: Optional[str | Path] = None) -> list[Game]:
    games = ordered(solvable_games(games_root(data_dir, cache_dir), split), task_types)
    return games[:max(0, limit)] if limit is not None else games
