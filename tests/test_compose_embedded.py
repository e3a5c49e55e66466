"""The README's two questions on the embedded default model (SmolLM2-135M), end to end:
whatever the 135M model writes, the answer a user reads starts with the hours."""

from pathlib import Path

import pytest

from agentmodes.agent import Agent
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.modes.compose import MAX_CHARS
from agentmodes.settings import ChatbotSettings

from test_compose import ADDRESS, EMAIL, HOURS, PHONE, SATURDAY, first_sentence

pytestmark = [pytest.mark.slow, pytest.mark.llm]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = KnowledgeBase.open(tmp_path_factory.mktemp("readme") / "examples.db")
    base.ingest(EXAMPLES)
    yield base
    base.close()


@pytest.fixture(scope="module")
def llm():
    pytest.importorskip("llama_cpp")
    from agentmodes.llm.registry import load_llm
    return load_llm(None)


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
