"""Guards against a small model's looping and ungrounded answers (modes/grounding.py)."""

from agentmodes.modes.grounding import RepetitionGuard, grounded
from agentmodes.tools.base import Source

from agent_fakes import done_of, make_agent

SOURCES = [Source("Kontakt", "kontakt.md", "Öffnungszeiten: Mo-Fr 9-18 Uhr, Sa nach Vereinbarung")]
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


def test_grounded_by_citation_or_shared_words():
    assert grounded("Siehe [1].", SOURCES)
    assert grounded("Montags bis freitags: Mo-Fr 9-18 Uhr, samstags nach Vereinbarung.", SOURCES)
    assert not grounded("Diesen Agentur ist die DKF-Gruppen in der Ausführt.", SOURCES)
    assert grounded("Irgendetwas ganz anderes.", [])          # nothing to compare with


def test_a_looping_final_answer_is_stopped_and_gets_the_findings():
    loop_reply = "DW/DG/DG: [DW/DG/DG] erwartet.\n\n" * 50
    agent, model = make_agent([SEARCH, loop_reply], agent_max_iterations=1)
    model.chunk_size = 16
    events = list(agent.stream("Wann hat die DG Agentur geöffnet?"))
    done = done_of(events)
    streamed = "".join(e["delta"] for e in events if "delta" in e and "status" not in e)
    assert done["full_response"].count("erwartet") <= 3
    assert "In den Dokumenten habe ich dazu gefunden:\n- Öffnungszeiten: Mo-Fr 9-18 Uhr" \
        in done["full_response"]
    assert done["full_response"].endswith("[1]")
    assert streamed.count("erwartet") <= 3 and streamed.strip().endswith("[1]")


def test_an_ungrounded_step_answer_gets_the_findings_a_cited_one_does_not():
    agent, _ = make_agent([SEARCH, "REFLECTION: r\nFINAL ANSWER: Diesen Agentur ist die Gruppen."])
    answer = done_of(list(agent.stream("Wann geöffnet?")))["full_response"]
    assert answer.startswith("Diesen Agentur ist die Gruppen.\n\nIn den Dokumenten")
    agent, _ = make_agent([SEARCH, "REFLECTION: r\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"])
    assert done_of(list(agent.stream("Wann geöffnet?")))["full_response"] == "Mo-Fr 9-18 Uhr [1]"
