"""The loop's seed rules of issue 13: event order and content (seed 000), observation
streaming, the answer's precedence, the preview length per mode, require_search."""

import pytest

from agentmodes.modes.loop import Episode
from agentmodes.tools.base import ToolResult

from agent_fakes import FakeKB, check_well_formed, done_of, make_agent, statuses

Q = "Wann hat die DG Agentur geöffnet?"
SEARCH = 'REFLECTION: Ich suche {0}.\nACTION: rag_search("{0}")'


def run(agent, question=Q):
    events = list(agent.stream(question))
    check_well_formed(events)
    return events


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 64])
def test_reflection_is_emitted_when_the_action_label_begins(chunk_size):
    agent, model = make_agent([SEARCH.format("Öffnungszeiten"), "REFLECTION: r\nFINAL ANSWER: a"])
    model.chunk_size = chunk_size
    events = run(agent)
    first = [e for e in events if e.get("iteration") == 1]
    names = [e["status"] for e in first]
    assert names.index("reflection") < names.index("action_delta")
    assert names.index("reflection") > max(i for i, n in enumerate(names)
                                           if n == "reflection_delta")
    reflection = next(e for e in first if e["status"] == "reflection")
    assert reflection["reflection"] == "Ich suche Öffnungszeiten."
    assert "usage" not in reflection              # its call was still running
    assert names.count("reflection") == 1


def test_thought_before_action_delta_in_react_and_unlabelled_lead_text():
    agent, _ = make_agent(['I should look it up.\nACTION: rag_search("Öffnungszeiten")',
                           "THOUGHT: ok\nFINAL ANSWER: a"], agent_mode="react")
    events = run(agent)
    names = [e["status"] for e in events if e.get("iteration") == 1]
    assert names.index("thought") < names.index("action_delta")
    assert next(e for e in events if e.get("status") == "thought")["thought"] == \
        "I should look it up."


def test_iteration_events_carry_the_steps_so_far():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), "kaputt",
                           SEARCH.format("Telefon"), "REFLECTION: fertig\nFINAL ANSWER: a [1]"])
    events = run(agent)
    iterations = [e for e in events if e.get("status") == "iteration"]
    assert [len(e["steps"]) for e in iterations] == [0, 1, 2, 3]
    first, unreadable, second = iterations[3]["steps"]
    assert first["iteration"] == 1 and first["reflection"] == "Ich suche Öffnungszeiten."
    assert (first["action"], first["param"]) == ("rag_search", "Öffnungszeiten")
    assert first["observation"].startswith("[1] Kontakt: Öffnungszeiten")
    assert unreadable["iteration"] == 2 and "parse_error" in unreadable
    assert second["param"] == "Telefon"
    assert iterations[1]["steps"] == iterations[3]["steps"][:1]    # not changed afterwards


def test_search_results_arrive_source_by_source_as_observation_deltas():
    agent, model = make_agent(['REFLECTION: r\nACTION: rag_search("Öffnungszeiten Impressum")',
                               "REFLECTION: r\nFINAL ANSWER: a"])
    events = run(agent)
    deltas = [e["delta"] for e in events if e.get("status") == "observation_delta"]
    assert len(deltas) == 2                               # two hits, one delta each
    assert deltas[0].startswith("[1] Kontakt") and deltas[1].startswith("\n[2] Impressum")
    names = statuses(events)
    assert names.index("action") < names.index("observation_delta") < names.index("observation")
    # the deltas add up to exactly what the model reads next
    assert model.calls[1]["messages"][-1]["content"] == "OBSERVATION: " + "".join(deltas)


def test_a_streaming_tool_shows_its_output_while_it_runs():
    produced = []

    class Slow:
        name, parameter = "report", "topic"
        description = description_de = "Writes a report"

        def stream(self, argument):
            for part in ("Teil 1. ", "Teil 2. ", "Teil 3."):
                produced.append(part)
                yield part
            yield ToolResult("ignored: the streamed text is the observation")

    agent, model = make_agent(['REFLECTION: r\nACTION: report("Q3")',
                               "REFLECTION: r\nFINAL ANSWER: fertig"])
    agent.extra_tools = [Slow()]
    seen = []
    for event in agent.stream(Q):
        if event.get("status") == "observation_delta":
            seen.append((event["delta"], len(produced)))    # delivered before the next part
    assert seen == [("Teil 1. ", 1), ("Teil 2. ", 2), ("Teil 3.", 3)]
    assert model.calls[1]["messages"][-1]["content"] == "OBSERVATION: Teil 1. Teil 2. Teil 3."


def test_a_tool_failing_mid_stream_keeps_what_it_produced():
    class Flaky:
        name, parameter = "report", "topic"
        description = description_de = "Writes a report"

        def stream(self, argument):
            yield "Teil 1."
            raise OSError("disk full")

    agent, model = make_agent(['REFLECTION: r\nACTION: report("Q3")',
                               "REFLECTION: r\nFINAL ANSWER: fertig"])
    agent.extra_tools = [Flaky()]
    obs = next(e for e in run(agent) if e.get("status") == "observation")
    assert obs["error"] and "disk full" in obs["result_preview"]


def test_observation_preview_is_200_characters_for_act_and_300_for_reflact():
    long_docs = [(1, "Kontakt", "k.md", "Öffnungszeiten " + "x" * 1000)]
    agent, _ = make_agent(['ACTION: rag_search("Öffnungszeiten")', 'ACTION: respond("a [1]")'],
                          agent_mode="act", kb=FakeKB(docs=long_docs))
    obs = next(e for e in run(agent) if e.get("status") == "observation")
    assert len(obs["result_preview"]) == 200
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), "REFLECTION: r\nFINAL ANSWER: a"],
                          kb=FakeKB(docs=long_docs))
    obs = next(e for e in run(agent) if e.get("status") == "observation")
    assert len(obs["result_preview"]) == 300


def test_a_final_answer_after_an_action_in_the_same_reply_ends_the_run():
    kb = FakeKB()
    agent, model = make_agent([SEARCH.format("Öffnungszeiten"),
                               'REFLECTION: r\nACTION: rag_search("Telefon")\n'
                               "FINAL ANSWER: Mo-Fr 9-18 Uhr [1]"], kb=kb)
    events = run(agent)
    assert kb.queries == [("Öffnungszeiten", "hybrid")]       # the second search never ran
    assert statuses(events).count("action") == 1
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]"


def test_require_search_off_restores_the_seeds_first_answer_ends_the_run():
    kb = FakeKB()
    agent, model = make_agent(["REFLECTION: Ich weiß es.\nFINAL ANSWER: Immer geöffnet."],
                              kb=kb, require_search=False)
    events = run(agent)
    assert kb.queries == [] and len(model.calls) == 1
    assert "action" not in statuses(events)
    assert done_of(events)["full_response"] == "Immer geöffnet."
    agent, model = make_agent(['ACTION: respond("Immer geöffnet.")'], agent_mode="act",
                              require_search=False)
    assert done_of(run(agent))["full_response"] == "Immer geöffnet."


def test_the_forced_search_says_why():
    agent, _ = make_agent(["REFLECTION: Ich weiß es.\nFINAL ANSWER: Immer geöffnet.",
                           "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1]"])
    action = next(e for e in run(agent) if e.get("status") == "action")
    assert action["forced"] == "answer_without_sources"
    assert "require_search" in action["reason"] and "before searching" in action["reason"]


def test_a_user_tool_named_search_is_called_by_its_name():
    calls = []

    class Search:
        name, parameter = "search", "query"
        description = description_de = "The company wiki"

        def __call__(self, argument):
            calls.append(argument)
            return ToolResult(f"wiki: {argument}")

    agent, _ = make_agent(["Thought: wiki\nAction: Search[Urlaub]",
                           "Thought: ok\nFINAL ANSWER: 30 Tage"], agent_mode="react")
    agent.extra_tools = [Search()]
    events = run(agent)
    assert calls == ["Urlaub"]
    assert next(e for e in events if e.get("status") == "observation")["result_preview"] == \
        "wiki: Urlaub"


def test_observations_say_whether_the_action_had_an_effect():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), SEARCH.format("Öffnungszeiten?"),
                           SEARCH.format("Quantenphysik"), 'REFLECTION: r\nACTION: teleport("x")',
                           "REFLECTION: r\nFINAL ANSWER: a [1]"])
    effects = [e["effect"] for e in run(agent) if e.get("status") == "observation"]
    # new sources / the same sources again / no hits / an unknown tool
    assert effects == [True, False, False, False]


def test_repeat_limit_none_lets_an_environment_judge_repeats_itself():
    from agentmodes import prompts
    from agentmodes.llm.scripted import ScriptedModel
    from agentmodes.modes.reflact import REFLACT
    from agentmodes.settings import ChatbotSettings
    from agentmodes.tools.registry import build_tools

    same = SEARCH.format("Öffnungszeiten")
    tools = build_tools(ChatbotSettings(), FakeKB(), lang="de")
    episode = Episode(REFLACT, ScriptedModel([same] * 4 + ["a [1]"]), tools, question=Q,
                      system=prompts.load("reflact", "de"), max_iterations=4, lang="de",
                      threshold=0.99, repeat_limit=None)
    events = list(episode.run())
    assert "repeated_action" not in statuses(events)
    assert statuses(events).count("observation") == 4
