"""The shared loop (modes/loop.py), one test per rule of issue 3 item 3, on the scripted model."""

import pytest

from agentmodes.errors import AgentModesError, ConfigError, LLMError
from agentmodes.events import STATUSES
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.tools.base import ToolResult

from agent_fakes import FakeKB, check_well_formed, done_of, make_agent, statuses

Q = "Wann hat die DG Agentur geöffnet?"
SEARCH = 'REFLECTION: Ich suche.\nACTION: rag_search("{}")'


def run(agent, question=Q, history=None):
    events = list(agent.stream(question, history))
    check_well_formed(events)
    return events


def test_iterations_stop_at_the_budget_then_max_iterations_reached_and_an_answer():
    replies = [SEARCH.format(q) for q in ("Öffnungszeiten", "Telefon", "Impressum")]
    agent, model = make_agent(replies + ["Mo-Fr 9-18 Uhr [1]."], agent_max_iterations=3)
    events = run(agent)
    assert statuses(events).count("iteration") == 3
    assert statuses(events)[-2:] == ["max_iterations_reached", "final_answer"]
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]."
    assert len(model.calls) == 4                      # 3 steps + the final answer call


@pytest.mark.parametrize("n, budget", [(5, 7), (9, 10), (1, 3)])
def test_multihop_budget_is_n_plus_2_capped_at_10(n, budget):
    replies = [SEARCH.format(f"Suche {i}") for i in range(budget)] + ["Antwort"]
    agent, _ = make_agent(replies, agent_max_iterations=n, task_type="multihop")
    events = run(agent)
    assert statuses(events).count("iteration") == budget
    assert events[1]["max"] == budget


def test_a_failing_tool_becomes_an_observation_and_the_run_goes_on():
    class Broken:
        name, parameter = "rag_search", "query"
        description = description_de = "broken"

        def __call__(self, argument):
            raise RuntimeError("index file is corrupt")

    agent, model = make_agent([SEARCH.format("x"), "REFLECTION: r\nFINAL ANSWER: keine Daten"])
    agent.extra_tools = [Broken()]
    events = run(agent)
    obs = next(e for e in events if e.get("status") == "observation")
    assert obs["error"] and "index file is corrupt" in obs["result_preview"]
    assert "index file is corrupt" in model.calls[1]["messages"][-1]["content"]
    assert done_of(events)["full_response"] == "keine Daten"


def test_an_unknown_tool_becomes_an_observation_listing_the_available_tools():
    agent, model = make_agent(['REFLECTION: r\nACTION: google("Öffnungszeiten")',
                               "REFLECTION: r\nFINAL ANSWER: ok"], language="en")
    events = run(agent)
    obs = next(e for e in events if e.get("status") == "observation")
    assert "Unknown tool 'google'" in obs["result_preview"]
    assert "rag_search, lexical_search, respond" in obs["result_preview"]
    assert obs["error"] is True


def test_a_parse_failure_is_fed_back_once_with_its_hint():
    agent, model = make_agent(["Ich weiß es nicht genau.", SEARCH.format("Öffnungszeiten"),
                               "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1]"])
    events = run(agent)
    err = next(e for e in events if e.get("status") == "parse_error")
    assert err["recovered"] is False and "ACTION" in err["hint"]
    feedback = model.calls[1]["messages"][-1]
    assert feedback["role"] == "user" and err["hint"] in feedback["content"]
    assert done_of(events)["full_response"] == "Mo-Fr [1]"


def test_a_second_parse_failure_recovers_by_searching_the_question():
    kb = FakeKB()
    agent, model = make_agent(["Keine Ahnung.", "Immer noch keine Ahnung.",
                               "REFLECTION: r\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"], kb=kb)
    events = run(agent)
    errors = [e for e in events if e.get("status") == "parse_error"]
    assert [e["recovered"] for e in errors] == [False, True]
    action = next(e for e in events if e.get("status") == "action")
    assert (action["action"], action["param"]) == ("rag_search", Q)
    assert kb.queries == [(Q, "hybrid")]
    assert done_of(events)["model_answer"] == "Mo-Fr 9-18 Uhr [1]"


def test_repeated_parse_failures_end_in_a_best_effort_answer():
    # something was found already: the second failure ends the loop with an answer
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), "kaputt", "wieder kaputt",
                           "Mo-Fr 9-18 Uhr [1]"])
    events = run(agent)
    assert statuses(events).count("action") == 1 and statuses(events)[-1] == "final_answer"
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]"
    # nothing found: the question is searched once, then the next failure answers
    agent, model = make_agent(["kaputt", "kaputt", "kaputt", "Mo-Fr [1]"])
    events = run(agent)
    assert statuses(events).count("action") == 1 and len(model.calls) == 4
    assert done_of(events)["model_answer"] == "Mo-Fr [1]"


def test_the_same_action_three_times_in_a_row_is_stopped():
    kb = FakeKB()
    same = SEARCH.format("Öffnungszeiten")
    agent, model = make_agent([same, same, same, "Mo-Fr 9-18 Uhr [1]"], kb=kb)
    events = run(agent)
    rep = next(e for e in events if e.get("status") == "repeated_action")
    assert rep["count"] == 3 and rep["iteration"] == 3
    assert len(kb.queries) == 2                       # the third was not executed
    assert statuses(events)[-1] == "final_answer"
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]"


def test_same_query_differently_spelled_counts_as_the_same_action():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), SEARCH.format("öffnungszeiten "),
                           SEARCH.format("ÖFFNUNGSZEITEN"), "Antwort [1]"])
    assert "repeated_action" in statuses(run(agent))


def test_adaptive_exit_on_high_confidence_answers_from_the_observations():
    agent, model = make_agent([SEARCH.format("Öffnungszeiten"), "Mo-Fr 9-18 Uhr [1]."],
                              kb=FakeKB(confidence=0.95))
    events = run(agent)
    s = statuses(events)
    i = s.index("adaptive_iteration")
    assert s[i:i + 3] == ["adaptive_iteration", "adaptive_response", "final_answer"]
    assert events[[k for k, e in enumerate(events) if e.get("status") == "adaptive_response"][0]][
        "reason"] == "high_confidence_results"
    final_prompt = model.calls[1]["messages"]
    assert "Mo-Fr 9-18 Uhr" in final_prompt[-2]["content"]      # the observation
    assert "FINAL ANSWER" in final_prompt[-1]["content"]
    done = done_of(events)
    assert done["adaptive_exit"] is True and done["iterations"] == 1
    assert done["full_response"] == "Mo-Fr 9-18 Uhr [1]."


def test_no_adaptive_exit_below_the_threshold_or_when_disabled():
    replies = [SEARCH.format("Öffnungszeiten"), "REFLECTION: r\nFINAL ANSWER: ok [1]"]
    agent, _ = make_agent(list(replies), kb=FakeKB(confidence=0.85))
    assert "adaptive_iteration" not in statuses(run(agent))
    agent, _ = make_agent(list(replies), kb=FakeKB(confidence=0.99), adaptive_iteration=False)
    assert "adaptive_iteration" not in statuses(run(agent))
    agent, _ = make_agent(list(replies), kb=FakeKB(confidence=0.85),
                          high_confidence_threshold=0.8)
    assert "adaptive_iteration" in statuses(run(agent))


def test_default_threshold_comes_from_the_knowledge_base_calibration():
    from agentmodes.modes.loop import default_threshold
    try:
        from agentmodes.knowledge.confidence import HIGH_CONFIDENCE
    except ImportError:
        HIGH_CONFIDENCE = 0.8
    assert default_threshold() == pytest.approx(float(HIGH_CONFIDENCE))


def test_best_effort_answer_at_the_limit_is_never_empty():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), ""], agent_max_iterations=1)
    done = done_of(run(agent))
    assert "Mo-Fr 9-18 Uhr" in done["full_response"] and "[1]" in done["full_response"]
    agent, _ = make_agent([SEARCH.format("Quantenphysik"), "   "], agent_max_iterations=1)
    done = done_of(run(agent))
    assert "keine Informationen" in done["full_response"] and Q in done["full_response"]


def test_citations_that_match_no_source_are_removed():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"),
                           "REFLECTION: r\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1] [9], Tel [1, 7] [0]."])
    events = run(agent)
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1], Tel [1]."
    assert [e["delta"] for e in events if "delta" in e and "status" not in e] == \
        ["Mo-Fr 9-18 Uhr [1], Tel [1]."]


def test_sources_are_numbered_across_the_run_and_deduplicated_by_chunk():
    agent, model = make_agent([SEARCH.format("Öffnungszeiten"), SEARCH.format("Telefon erreichbar"),
                               SEARCH.format("Öffnungszeiten Impressum"),
                               "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1], Tel [2], Mail [3]"])
    done = done_of(run(agent))
    assert [(s["index"], s["chunk_id"]) for s in done["sources"]] == [(1, 1), (2, 2), (3, 3)]
    third_obs = model.calls[3]["messages"][-1]["content"]
    assert "[1] Kontakt: Öffnungszeiten" in third_obs and "[3] Impressum" in third_obs
    assert all(s["cited"] for s in done["sources"])


def test_done_carries_full_response_sources_and_goal():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1]"])
    done = done_of(run(agent))
    assert done["full_response"] == "Mo-Fr [1]" and done["goal"] == Q
    assert done["sources"][0]["title"] == "Kontakt" and done["sources"][0]["source"] == "kontakt.md"
    assert done["usage"]["calls"] == 2


def test_every_event_after_an_llm_call_carries_usage_and_statuses_are_known():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"), "kaputt",
                           SEARCH.format("Telefon"), SEARCH.format("Telefon"),
                           SEARCH.format("Telefon"), "Antwort [1]"])
    events = run(agent)
    first_call = next(i for i, e in enumerate(events) if e.get("status") == "reflection")
    for e in events[first_call:]:
        if "status" in e:
            assert e["status"] in STATUSES
            if e["status"] == "reflection" and "usage" not in e:
                continue              # sent while its call was still running (seed 000 order)
            if not e["status"].endswith("_delta") and e["status"] not in ("iteration", "reflecting"):
                assert e["usage"]["calls"] == 1, e
    assert done_of(events)["usage"]["calls"] == 6


def test_deltas_stream_the_reasoning_and_the_action():
    agent, _ = make_agent(['REFLECTION: Ich weiß noch nichts über die Zeiten.\n'
                           'ACTION: rag_search("Öffnungszeiten")', "REFLECTION: r\nFINAL ANSWER: a"])
    events = run(agent)
    reflection = "".join(e["delta"] for e in events if e.get("status") == "reflection_delta"
                         and e["iteration"] == 1)
    action = "".join(e["delta"] for e in events if e.get("status") == "action_delta")
    assert reflection.strip() == "Ich weiß noch nichts über die Zeiten."
    assert action.strip() == 'rag_search("Öffnungszeiten")'


class FailingModel(ScriptedModel):
    def __init__(self, replies, fail_at):
        super().__init__(replies)
        self.fail_at = fail_at

    def stream(self, messages, options=None):
        if len(self.calls) + 1 >= self.fail_at:
            self.calls.append({"messages": messages, "options": options})
            raise LLMError("server at 127.0.0.1:9 refused the connection")
        return super().stream(messages, options)


def test_an_llm_failure_before_anything_was_found_is_a_clear_error():
    agent, _ = make_agent([])
    agent._llm = FailingModel([], fail_at=1)
    with pytest.raises(LLMError, match="refused"):
        run(agent)


def test_an_llm_failure_later_keeps_what_was_found():
    agent, _ = make_agent([])
    agent._llm = FailingModel([SEARCH.format("Öffnungszeiten")], fail_at=2)
    events = run(agent)
    assert "error" in statuses(events)
    done = done_of(events)
    assert "Mo-Fr 9-18 Uhr" in done["full_response"] and done["sources"]


def test_history_goes_into_the_prompt_before_the_question():
    agent, model = make_agent(["REFLECTION: r\nFINAL ANSWER: Samstag nach Vereinbarung"])
    run(agent, "Und samstags?", history=[("user", "Wann hat die Agentur geöffnet?"),
                                         {"role": "assistant", "content": "Mo-Fr 9-18 Uhr."}])
    roles = [(m["role"], m["content"]) for m in model.calls[0]["messages"][1:]]
    assert roles == [("user", "Wann hat die Agentur geöffnet?"),
                     ("assistant", "Mo-Fr 9-18 Uhr."), ("user", "Und samstags?")]


def test_bad_input_is_a_one_line_error():
    agent, _ = make_agent([])
    with pytest.raises(AgentModesError, match="empty"):
        agent.stream("   ")
    with pytest.raises(ConfigError, match="history role"):
        agent.stream("Frage?", history=[("robot", "x")])
    agent.settings.agent_mode = "telepathy"
    with pytest.raises(ConfigError, match="unknown agent mode"):
        agent.run("Frage?")
    agent.settings.agent_mode = "act"
    agent.settings.tools_enabled = ["rag_search", "teleport"]
    with pytest.raises(ConfigError, match="teleport"):
        agent.run("Frage?")


def test_respond_ends_the_episode_from_any_mode():
    agent, _ = make_agent([SEARCH.format("Öffnungszeiten"),
                           'REFLECTION: r\nACTION: respond("Mo-Fr 9-18 Uhr")'])
    events = run(agent)
    assert statuses(events)[-2:] == ["action", "final_answer"]
    assert done_of(events)["full_response"] == "Mo-Fr 9-18 Uhr [1]"   # the composer cites it


def test_extra_tools_are_offered_and_replace_builtins_by_name():
    class Clock:
        name, parameter = "clock", "zone"
        description, description_de = "Current time", "Aktuelle Uhrzeit"

        def __call__(self, argument):
            return ToolResult(f"12:00 in {argument}")

    agent, model = make_agent(['REFLECTION: r\nACTION: clock("Berlin")',
                               "REFLECTION: r\nFINAL ANSWER: 12 Uhr"])
    agent.extra_tools = [Clock()]
    events = run(agent)
    assert "- clock(zone): Aktuelle Uhrzeit" in model.calls[0]["messages"][0]["content"]
    assert "12:00 in Berlin" in next(e for e in events
                                     if e.get("status") == "observation")["result_preview"]


def test_an_answer_before_any_search_is_grounded_by_searching_the_question_first():
    kb = FakeKB()
    agent, model = make_agent(["REFLECTION: Ich weiß es.\nFINAL ANSWER: Immer geöffnet.",
                               "REFLECTION: r\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"], kb=kb)
    events = run(agent)
    action = next(e for e in events if e.get("status") == "action")
    assert (action["action"], action["param"], action["forced"]) == (
        "rag_search", Q, "answer_without_sources")
    assert kb.queries == [(Q, "hybrid")]
    assert done_of(events)["model_answer"] == "Mo-Fr 9-18 Uhr [1]"
    # without a knowledge base there is nothing to ground on: the answer stands
    agent, _ = make_agent(["FINAL ANSWER: Bern"])
    agent.knowledge = None
    assert done_of(run(agent))["full_response"] == "Bern"
    # ACT's respond before any search is grounded the same way
    agent, model = make_agent(['ACTION: respond("Immer geöffnet.")', "Mo-Fr 9-18 Uhr [1]"],
                              agent_mode="act", agent_max_iterations=1)
    events = run(agent)
    assert next(e for e in events if e.get("status") == "action")["forced"]
    assert done_of(events)["model_answer"] == "Mo-Fr 9-18 Uhr [1]"
    # a follow-up question with history, and ACT's clarifying respond, may answer directly
    agent, _ = make_agent(["FINAL ANSWER: Samstags nach Vereinbarung."])
    assert run(agent, "Und samstags?", history=[("user", "Öffnungszeiten?"),
                                                ("assistant", "Mo-Fr 9-18 Uhr.")])
    agent, _ = make_agent(['ACTION: respond("Welche Filiale meinen Sie?")'], agent_mode="act")
    assert done_of(run(agent))["full_response"] == "Welche Filiale meinen Sie?"


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 64])
def test_streamed_final_answer_matches_the_full_response(chunk_size):
    agent, model = make_agent([SEARCH.format("Öffnungszeiten"),
                               "REFLECTION: fertig\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1][9], "
                               "Sa nach Vereinbarung [1, 12]."], agent_max_iterations=1)
    model.chunk_size = chunk_size
    events = run(agent)
    streamed = "".join(e["delta"] for e in events if "delta" in e and "status" not in e)
    done = done_of(events)
    assert done["full_response"] == "Mo-Fr 9-18 Uhr [1], Sa nach Vereinbarung [1]."
    assert streamed.strip() == done["full_response"]
    assert "fertig" not in streamed and "FINAL" not in streamed    # the final call's labels
