"""The embedded default model (SmolLM2-135M on llama.cpp) end to end on examples/.

The model is tiny, so its own wording is not asserted: the run must be well formed (the GBNF
grammar keeps every step parsable) and end in a non-empty, cited-or-honest answer; the
README's two questions must get the hours (and the contacts) first from the composer.
"""

from pathlib import Path

import pytest

from agentmodes.agent import Agent
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.modes.compose import MAX_CHARS
from agentmodes.settings import ChatbotSettings

from agent_fakes import check_well_formed
from test_compose import ADDRESS, EMAIL, HOURS, PHONE, SATURDAY, first_sentence

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


# -- the README's two questions: whatever the 135M model writes, the answer a user reads
# starts with the hours (the answer composer, modes/compose.py) ---------------------------
def ask(kb, llm, question, mode="reflact", task_type="lookup"):
    agent = Agent(llm=llm, knowledge=kb,
                  settings=ChatbotSettings(agent_mode=mode, task_type=task_type))
    return agent.run(question)


@pytest.mark.parametrize("mode", ["reflact", "act"])
def test_the_readme_question_gets_the_hours_in_its_first_sentence(kb, llm, mode):
    result = ask(kb, llm, "Wann hat die DG Agentur geöffnet?", mode)
    answer = result.answer
    assert HOURS.search(first_sentence(answer)), answer
    assert SATURDAY.search(answer.split("\n")[0]), answer
    assert len(answer) <= MAX_CHARS
    cited = [s for s in result.done["sources"] if s["cited"]]
    assert cited and any(Path(s["source"]).name == "kontakt.md" for s in cited)


def test_the_two_part_readme_question_gets_hours_first_then_contacts(kb, llm):
    result = ask(kb, llm, "Wann hat die DG Agentur geöffnet und wie erreiche ich sie?",
                 "reflact", "multihop")
    answer = result.answer
    assert HOURS.search(first_sentence(answer)), answer
    for contact in (PHONE, EMAIL, ADDRESS):
        assert contact in answer, answer
    assert len(answer) <= MAX_CHARS
