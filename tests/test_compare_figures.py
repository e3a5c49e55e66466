"""The figures a comparison reports are read off the events, for the runs that are hard to
count: unreadable steps, the iteration limit (the answer written after the loop), a failed
LLM call after something was found, ACT's respond(), and events read back from JSON."""

from __future__ import annotations

import json

import pytest

from agentmodes import Agent, ChatbotSettings
from agentmodes.compare import Comparison, Question, figures_of
from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.llm.scripted import ScriptedModel
from kb_fixtures import examples_kb
from test_compare_cli import assert_adds_up

SEARCH = 'THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")'


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    with KnowledgeBase.open(examples_kb(tmp_path_factory.mktemp("fig") / "kb.db")) as base:
        yield base


def run(kb, mode, replies, **settings):
    settings = ChatbotSettings(agent_mode=mode, adaptive_iteration=False, **settings)
    agent = Agent(llm=ScriptedModel(replies), knowledge=kb, settings=settings)
    events = [e for e in agent.stream("Wann hat die DG Agentur geöffnet?")]
    return events, figures_of(mode, events).as_dict()


@pytest.mark.parametrize("mode, replies, check", [
    # An unreadable step, fed back once, then a good run.
    ("react", ["I am not sure what to do.", SEARCH, "THOUGHT: ok\nFINAL ANSWER: 9-18 Uhr [1]"],
     lambda f: f["parse_errors"] == 1 and f["other_calls"] == 0 and f["iterations"] == 3),
    # Searching until the limit: the answer is one more call after the loop.
    ("react", [SEARCH] * 2 + ['THOUGHT: more\nACTION: lexical_search("Telefon")',
                              "Die Agentur hat 9-18 Uhr geöffnet [1]."],
     lambda f: f["max_iterations_reached"] and f["other_calls"] == 1
     and f["stop_reason"] == "max_iterations" and len(f["calls"]) == 3),
    # The same search again finds nothing new; the next, different search is a correction.
    ("react", [SEARCH, SEARCH, 'THOUGHT: other\nACTION: lexical_search("Telefon")',
               "THOUGHT: ok\nFINAL ANSWER: 9-18 Uhr [1]"],
     lambda f: f["unproductive_actions"] == 1 and f["corrections"] == 1 and f["actions"] == 3),
    # ACT ends with respond(answer): the respond is not a tool call.
    ("act", ['ACTION: lexical_search("Öffnungszeiten")', 'ACTION: respond("9-18 Uhr [1]")'],
     lambda f: f["actions"] == 1 and f["other_calls"] == 0 and f["llm_calls"] == 2),
])
def test_hard_runs_add_up(kb, mode, replies, check):
    events, figures = run(kb, mode, replies, agent_max_iterations=3)
    assert check(figures), figures
    assert_adds_up(figures, [e for e in events if "delta" not in e or e.get("done")])


def test_a_failed_call_after_a_search_counts_no_tokens(kb):
    # The second step's call fails (no reply left): the run answers from what it found, and
    # the failed call (no usage) is not counted as the first call's duplicate.
    events, figures = run(kb, "react", [SEARCH])
    assert any(e.get("status") == "error" for e in events)
    assert figures["llm_calls"] == 1 and len(figures["calls"]) == 1
    assert figures["other_calls"] == 0 and figures["stop_reason"] == "llm_error"


def test_figures_from_json_round_trip_are_the_same(kb):
    events, figures = run(kb, "reflact", ['REFLECTION: los\nACTION: lexical_search("Telefon")',
                                          "REFLECTION: fertig\nFINAL ANSWER: +49 911 [1]"])
    again = figures_of("reflact", [json.loads(json.dumps(e)) for e in events]).as_dict()
    assert again == figures


def test_comparison_keeps_going_when_one_mode_fails(kb):
    model = ScriptedModel([SEARCH, "THOUGHT: ok\nFINAL ANSWER: 9-18 Uhr [1]"])
    rows = Comparison(model, kb, modes=["react", "reflact"],
                      settings=ChatbotSettings(adaptive_iteration=False)).run(
        [Question(1, "q1", "Wann hat die DG Agentur geöffnet?")])
    assert [r.variant for r in rows] == ["react", "reflact"]
    assert rows[0].figures.error is None and "no reply left" in rows[1].figures.error
