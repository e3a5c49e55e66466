"""Load the code benchmarks in place from the shared data folder (never copied).

- HumanEval: humaneval/HumanEval.jsonl.gz, 164 problems.
- MBPP: mbpp/sanitized-mbpp.json, the hand-verified set (427 problems); its README's test
  split is task ids 11-510 (257 of the sanitized problems), the default here.

The folder is, in order: the `data_dir` argument (CLI --data), $AGENTMODES_DATA, or
../shared/data next to the project checkout.
"""

from __future__ import annotations

import ast
import builtins
import gzip
import json
import os
from pathlib import Path
from typing import Iterable, Optional

from ..errors import AgentModesError
from ..evaluators.code import CodeTask

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data"
MBPP_TEST_SPLIT = range(11, 511)
MBPP_SPLITS = ("test", "all")


class DataError(AgentModesError):
    """A benchmark data folder or file is missing or unreadable."""


def data_root(data_dir: Optional[str | Path] = None) -> Path:
    root = Path(data_dir or os.environ.get("AGENTMODES_DATA") or DEFAULT_DATA_DIR)
    if not root.is_dir():
        raise DataError(f"benchmark data folder not found: {root} (pass --data DIR or set "
                        "AGENTMODES_DATA; the README's 'Benchmark data' says where each set "
                        "comes from)")
    return root


def _need(path: Path) -> Path:
    if not path.is_file():
        raise DataError(f"benchmark data file not found: {path}")
    return path


def load_humaneval(data_dir: Optional[str | Path] = None) -> list[CodeTask]:
    path = _need(data_root(data_dir) / "humaneval" / "HumanEval.jsonl.gz")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read {path}: {err}") from err
    return [CodeTask(task_id=r["task_id"], kind="humaneval", prompt=r["prompt"],
                     entry_point=r["entry_point"], test=r["test"],
                     reference=r["canonical_solution"]) for r in rows]


def load_mbpp(data_dir: Optional[str | Path] = None, split: str = "test") -> list[CodeTask]:
    """MBPP sanitized; split "test" (ids 11-510) or "all". task_id is "Mbpp/<id>", the
    spelling evalplus and bigcode samples use; score_samples also accepts plain ids."""
    if split not in MBPP_SPLITS:
        raise DataError(f"unknown MBPP split {split!r}; use one of {', '.join(MBPP_SPLITS)}")
    path = _need(data_root(data_dir) / "mbpp" / "sanitized-mbpp.json")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read {path}: {err}") from err
    tasks = []
    for r in rows:
        if split == "test" and r["task_id"] not in MBPP_TEST_SPLIT:
            continue
        tasks.append(CodeTask(task_id=f"Mbpp/{r['task_id']}", kind="mbpp", prompt=r["prompt"],
                              entry_point=_function_name(r["test_list"]),
                              test_list=tuple(r["test_list"]),
                              test_imports=tuple(r.get("test_imports") or ()),
                              reference=r["code"]))
    return tasks


def load_code_tasks(benchmark: str, data_dir: Optional[str | Path] = None,
                    split: str = "test") -> list[CodeTask]:
    if benchmark == "humaneval":
        return load_humaneval(data_dir)
    if benchmark == "mbpp":
        return load_mbpp(data_dir, split)
    raise DataError(f"unknown code benchmark {benchmark!r}; use humaneval or mbpp")


def _function_name(tests: Iterable[str]) -> str:
    """The function the asserts call (MBPP has no entry_point field): the first called
    name that is not a builtin."""
    for test in tests:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and not hasattr(builtins, node.func.id):
                return node.func.id
    return ""
