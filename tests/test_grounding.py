"""The guard against a small model's looping final answer (modes/grounding.py)."""

from agentmodes.modes.grounding import RepetitionGuard

from agent_fakes import done_of, make_agent

SEARCH = 'REFLECTION: Ich suche.\nACTION: rag_search("Öffnungszeiten")'


def test_repeated_lines_are_looping():
    guard = RepetitionGuard()
    text = ""
    for i in range(3):
        text += "DW/DG/DG: [DW/DG/DG] erwartet.\n\n"
        assert guard.feed(text) is (i == 2)


def test_a_repeated_tail_without_newlines_is_looping():
    text = "Die Agentur hat geöffnet, die Agentur hat geöffnet, " * 6
    assert RepetitionGuard().feed(text)


def test_ordinary_answers_are_not_looping():
    text = ("Die DG Agentur hat Montag bis Freitag von 9-18 Uhr geöffnet. [1]\n\nKontakt:\n"
            "- Telefon: +49 911 97554990\n- Email: office@dg-agentur.de\n"
            "- Adresse: Bahnhofstraße 2, 90402 Nürnberg [2]\n")
    guard = RepetitionGuard()
    assert not any(guard.feed(text[:i]) for i in range(1, len(text) + 1))


def test_a_looping_final_answer_is_stopped_and_replaced_by_what_the_sources_say():
    loop_reply = "DW/DG/DG: [DW/DG/DG] erwartet.\n\n" * 50
    agent, model = make_agent([SEARCH, loop_reply], agent_max_iterations=1)
    model.chunk_size = 16
    events = list(agent.stream("Wann hat die DG Agentur geöffnet?"))
    done = done_of(events)
    streamed = "".join(e["delta"] for e in events if "delta" in e and "status" not in e)
    assert "erwartet" not in done["full_response"] and "erwartet" not in streamed
    assert done["full_response"].startswith("Öffnungszeiten: Mo-Fr 9-18 Uhr")
    assert done["full_response"].endswith("[1]") and streamed == done["full_response"]
    assert done["composition"]["extractive"] and done["model_answer"].count("erwartet") <= 3
