"""Shared set-up for the ALFWorld tests: the shared data, the extracted games (a temp folder,
never the user's home), and skips that say what is missing."""

from __future__ import annotations

import pytest

from agentmodes.bench.codedata import DEFAULT_DATA_DIR, data_root
from agentmodes.environments.alfworld import engine_available

needs_data = pytest.mark.skipif(
    not (DEFAULT_DATA_DIR / "alfworld").is_dir() or not (DEFAULT_DATA_DIR / "react-prompts").is_dir(),
    reason="shared ALFWorld data (../shared/data/alfworld, react-prompts) not present")
needs_engine = pytest.mark.skipif(
    not engine_available(),
    reason="the ALFWorld game engine is not installed (pip install -e '.[alfworld]'; "
           "scripts/setup installs it unless AGENTMODES_NO_ALFWORLD=1)")


def shared_data():
    return data_root(None)


@pytest.fixture(scope="session")
def games_root(tmp_path_factory):
    from agentmodes.environments.alfworld_data import games_root as extract
    return extract(shared_data(), tmp_path_factory.mktemp("alfworld-games"))
