"""Where the tests find the shared benchmark data and seeds, and how they skip without them.

The data is never part of the project: it is read from $AGENTMODES_DATA, else
../shared/data beside the checkout (bench/codedata.data_root). A clone without it still
passes its tests: the tests that need a data set skip and say which file is missing and
how to provide it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from agentmodes.bench.codedata import DEFAULT_DATA_DIR, DataError, data_root

PROJECT = Path(__file__).resolve().parents[1]
SEEDS = PROJECT.parent / "shared" / "seeds"
HOW = "set AGENTMODES_DATA or put the data at ../shared/data (README: 'Benchmark data')"


def data_file(relative: str) -> Optional[Path]:
    """The path of a data file or folder, or None when it is not on this machine."""
    try:
        path = data_root() / relative
    except DataError:
        return None
    return path if path.exists() else None


def needs_data(*relative: str) -> pytest.MarkDecorator:
    """Skip unless every named file or folder of the data set is present."""
    missing = [r for r in relative if data_file(r) is None]
    return pytest.mark.skipif(bool(missing), reason=f"benchmark data not found: "
                              f"{', '.join(missing)} under {_root()} ({HOW})")


def require_data(relative: str) -> Path:
    """Inside a test or fixture: the path, or skip saying what is missing."""
    path = data_file(relative)
    if path is None:
        pytest.skip(f"benchmark data not found: {relative} under {_root()} ({HOW})")
    return path


def _root() -> str:
    try:
        return str(data_root())
    except DataError:
        import os
        return os.environ.get("AGENTMODES_DATA") or str(DEFAULT_DATA_DIR)


HOTPOTQA = "hotpotqa/hotpot-qa-distractor-sample.jsonl"
HUMANEVAL = "humaneval/HumanEval.jsonl.gz"
MBPP = "mbpp/sanitized-mbpp.json"
