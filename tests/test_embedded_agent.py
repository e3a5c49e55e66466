"""The embedded default model (SmolLM2-135M on llama.cpp) end to end on examples/.

The model is tiny, so the answer's wording is not asserted: the run must be well formed
(the GBNF grammar keeps every step parsable) and end in a non-empty, cited-or-honest answer.
"""

from pathlib import Path

import pytest

from agentmodes.agent import Agent
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.settings import ChatbotSettings

from agent_fakes import check_well_formed

pytestmark = [pytest.mark.slow, pytest.mark.llm]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = KnowledgeBase.open(tmp_path_factory.mktemp("emb") / "examples.db")
    base.ingest(EXAMPLES)
    yield base
    base.close()


@pytest.fixture(scope="module")
def llm():
    pytest.importorskip("llama_cpp")
    from agentmodes.llm.registry import load_llm
    return load_llm(None)       # cached per process and shared: not closed here


@pytest.mark.parametrize("mode", ["act", "react", "reflact", "plan-and-solve"])
def test_embedded_model_runs_every_mode_well_formed(kb, llm, mode):
    agent = Agent(llm=llm, knowledge=kb,
                  settings=ChatbotSettings(agent_mode=mode, agent_max_iterations=2))
    events = list(agent.stream("Wann hat die DG Agentur geöffnet?"))
    check_well_formed(events)
    assert not [e for e in events if e.get("status") == "parse_error"], \
        "the grammar should make every step parsable"
    done = events[-1]
    assert done["usage"]["calls"] >= 1 and done["usage"]["prompt_tokens"] > 0
    assert any(e.get("status") == "observation" for e in events)   # it searched the documents
    if mode == "plan-and-solve":                # the plan grammar makes the plan readable
        plan = next(e for e in events if e.get("status") == "plan")
        assert plan["plan"] and "fallback" not in plan
