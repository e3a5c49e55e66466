"""parse_step on the seeds' traces, ReAct-paper steps and what real models write."""

import pytest

from agentmodes.parsing import SectionRouter, parse_step

# --- seed 000 (ReflAct), the example trace, iteration by iteration --------------------------
SEED_REFLACT_1 = """REFLECTION:
  Aktueller Zustand: Der Benutzer fragt nach Öffnungszeiten UND Kontaktdaten.
                     Ich habe noch keine Informationen.
  Letzte Entdeckung: (Keine - Start der Aufgabe)
  Ziel-Relation: Ich brauche beide Informationen. Zuerst suche ich
                 nach Öffnungszeiten.
ACTION: rag_search("Öffnungszeiten DG Agentur")
OBSERVATION:
  [1] Kontakt: Mo-Fr 9-18 Uhr, Sa nach Vereinbarung
  [2] Wir sind telefonisch unter +49 911 97554990 erreichbar"""

SEED_REFLACT_2 = """REFLECTION:
  Aktueller Zustand: Ich habe Öffnungszeiten (Mo-Fr 9-18, Sa Vereinbarung)
                     und eine Telefonnummer (+49 911 97554990).
  Letzte Entdeckung: Dokument [1] enthält Öffnungszeiten,
                     [2] liefert Telefonnummer.
  Ziel-Relation: Öffnungszeiten: ✓ vollständig
                 Kontaktdaten: teilweise (Telefon ✓, Email fehlt, Adresse fehlt)
ACTION: rag_search("Kontakt Email Adresse Impressum")
OBSERVATION:
  [1] Impressum: Telefon +49 911 97554990, Email office@dg-agentur.de
  [2] Adresse: Bahnhofstraße 2, 90402 Nürnberg"""

SEED_REFLACT_3 = """REFLECTION:
  Aktueller Zustand: Ich habe alle benötigten Informationen:
                     - Öffnungszeiten: Mo-Fr 9-18 Uhr, Sa nach Vereinbarung
                     - Telefon: +49 911 97554990
                     - Email: office@dg-agentur.de
                     - Adresse: Bahnhofstraße 2, 90402 Nürnberg
  Letzte Entdeckung: Email und Adresse aus dem Impressum.
  Ziel-Relation: ZIEL ERREICHT - Alle Informationen vollständig.
FINAL ANSWER: Die DG Agentur hat Montag bis Freitag von 9-18 Uhr
              geöffnet, Samstag nach Vereinbarung. [1]

              Kontakt:
              - Telefon: +49 911 97554990
              - Email: office@dg-agentur.de
              - Adresse: Bahnhofstraße 2, 90402 Nürnberg [2]"""


def test_seed_reflact_iteration_1_action_and_three_part_reflection():
    step = parse_step(SEED_REFLACT_1, reflact=True)
    assert step.ok
    assert step.reasoning_label == "REFLECTION"
    assert "Aktueller Zustand" in step.reasoning and "Ziel-Relation" in step.reasoning
    assert (step.action.name, step.action.argument) == ("rag_search", "Öffnungszeiten DG Agentur")
    assert step.final_answer is None
    assert "OBSERVATION" not in step.text and "+49 911" not in step.text


def test_seed_reflact_iteration_2():
    step = parse_step(SEED_REFLACT_2, reflact=True)
    assert step.action.argument == "Kontakt Email Adresse Impressum"
    assert "Kontaktdaten: teilweise" in step.reasoning


def test_seed_reflact_iteration_3_final_answer_spans_lines():
    step = parse_step(SEED_REFLACT_3, reflact=True)
    assert step.action is None
    assert step.final_answer == (
        "Die DG Agentur hat Montag bis Freitag von 9-18 Uhr\ngeöffnet, Samstag nach "
        "Vereinbarung. [1]\n\nKontakt:\n- Telefon: +49 911 97554990\n- Email: "
        "office@dg-agentur.de\n- Adresse: Bahnhofstraße 2, 90402 Nürnberg [2]")
    assert "ZIEL ERREICHT" in step.reasoning


def test_seed_reflact_prompt_format_lines():
    step = parse_step('REFLECTION: Aktuell weiß ich nichts. Die letzte Suche ergab nichts. '
                      'Dies bringt mich nicht näher zum Ziel.\nACTION: rag_search("suchbegriff")')
    assert step.reasoning.startswith("Aktuell weiß ich")
    assert step.action.argument == "suchbegriff"
    done = parse_step("REFLECTION: Ich habe alle nötigen Informationen: X. Das Ziel ist erreicht."
                      "\nFINAL ANSWER: Antwort X [1]")
    assert done.final_answer == "Antwort X [1]"


# --- seed 002 (ACT) ------------------------------------------------------------------------
def test_seed_act_search_step():
    step = parse_step('ACTION: rag_search("Öffnungszeiten")\nOBSERVATION:\n'
                      '  [1] Öffnungszeiten: Mo-Fr 9-18 Uhr, Sa 10-14 Uhr')
    assert step.reasoning_label is None and step.reasoning == ""
    assert (step.action.name, step.action.argument) == ("rag_search", "Öffnungszeiten")


def test_seed_act_respond_with_multiline_argument():
    step = parse_step('ACTION: respond("Die Öffnungszeiten sind Montag bis Freitag\n'
                      '                 von 9 bis 18 Uhr und Samstag von 10 bis 14 Uhr. [1]")')
    assert step.action.name == "respond"
    assert step.action.argument.startswith("Die Öffnungszeiten sind Montag bis Freitag")
    assert step.action.argument.endswith("Samstag von 10 bis 14 Uhr. [1]")


def test_seed_act_prompt_format_unquoted_parameter():
    step = parse_step("ACTION: lexical_search(Öffnungszeiten Samstag)")
    assert (step.action.name, step.action.argument) == ("lexical_search", "Öffnungszeiten Samstag")


# --- ReAct paper (HotpotQA) style -------------------------------------------------------------
@pytest.mark.parametrize("text, name, argument", [
    ("Thought 1: I need to search Colorado orogeny, find the area that the eastern sector of "
     "the Colorado orogeny extends into.\nAction 1: Search[Colorado orogeny]\nObservation 1: "
     "The Colorado orogeny was an episode of mountain building.", "rag_search", "Colorado orogeny"),
    ("Thought 2: It does not mention the eastern sector. So I need to look up eastern sector."
     "\nAction 2: Lookup[eastern sector]", "lexical_search", "eastern sector"),
    ("Thought 1: I need to search Creed (band).\nAction 1: Search[Creed (band)]",
     "rag_search", "Creed (band)"),
    ("Thought 3: Pete Doherty.\nAction 3: Search[Pete Doherty]", "rag_search", "Pete Doherty"),
])
def test_react_paper_actions(text, name, argument):
    step = parse_step(text)
    assert step.ok and step.reasoning_label == "THOUGHT"
    assert (step.action.name, step.action.argument) == (name, argument)
    assert "Observation" not in step.text


@pytest.mark.parametrize("text, answer", [
    ("Thought 5: High Plains rise in elevation from around 1,800 to 7,000 ft, so the answer is "
     "1,800 to 7,000 ft.\nAction 5: Finish[1,800 to 7,000 ft]", "1,800 to 7,000 ft"),
    ("Thought: So the album came out in 2004.\nAction: Finish[2004]", "2004"),
])
def test_react_paper_finish_is_the_final_answer(text, answer):
    step = parse_step(text)
    assert step.action is None and step.final_answer == answer


# --- tolerance ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    'thought: x\naction: rag_search("q")',
    'Thought 12: x\nAction 12: rag_search("q")',
    '**Thought:** x\n**Action:** rag_search("q")',
    '**THOUGHT 2**: x\n**ACTION 2**: `rag_search("q")`',
    '- Thought: x\n- Action: rag_search("q")',
    "THOUGHT: x\nACTION: rag_search('q')",
    "THOUGHT: x\nACTION: rag_search(q)",
    'THOUGHT: x\nACTION: rag_search(query="q")',
    "THOUGHT: x\nACTION: rag_search[q]",
    'THOUGHT: x\nACTION: rag_search: q',
    'THOUGHT: x\nACTION: rag_search(\u201eq\u201c)',
    'THOUGHT: x ACTION: rag_search("q")',
    'THOUGHT: x\nACTION: rag_search("q"',
    'THOUGHT: x\nACTION: Search[q]',
    'THOUGHT: x\nACTION: {"name": "rag_search", "arguments": {"query": "q"}}',
    'THOUGHT: x\nACTION: [TOOL_CALLS] [{"name": "rag_search", "arguments": "{\\"query\\": \\"q\\"}"}]',
])
def test_tolerated_action_forms(text):
    step = parse_step(text)
    assert step.ok, step.error
    assert (step.action.name, step.action.argument) == ("rag_search", "q")
    assert step.reasoning == "x"


@pytest.mark.parametrize("text", [
    '[TOOL_CALLS] [{"name": "rag_search", "arguments": {"query": "q"}}]',
    '<tool_call>\n{"name": "rag_search", "arguments": {"query": "q"}}\n</tool_call>',
    '{"function": {"name": "rag_search", "arguments": "{\\"query\\": \\"q\\"}"}}',
    '{"action": "rag_search", "action_input": "q"}',
    'rag_search("q")',
    'I will search now.\nrag_search("q")',
])
def test_unlabelled_tool_calls(text):
    step = parse_step(text)
    assert step.ok, step.error
    assert (step.action.name, step.action.argument) == ("rag_search", "q")


def test_thought_is_read_as_reflection_only_in_reflact():
    assert parse_step('THOUGHT: a\nACTION: rag_search("q")', reflact=True).reasoning_label \
        == "REFLECTION"
    assert parse_step('THOUGHT: a\nACTION: rag_search("q")').reasoning_label == "THOUGHT"
    assert parse_step('Reflection: a\nAction: rag_search("q")').reasoning_label == "REFLECTION"


def test_invented_observation_and_everything_after_it_is_cut():
    step = parse_step('THOUGHT: a\nACTION: rag_search("q")\nObservation: [1] made up\n'
                      'THOUGHT: b\nFINAL ANSWER: invented')
    assert step.action.argument == "q" and step.final_answer is None
    assert "made up" not in step.text and "invented" not in step.text


def test_continuation_after_the_action_is_ignored():
    step = parse_step('THOUGHT: a\nACTION: rag_search("q")\nTHOUGHT 2: b\nACTION 2: rag_search("r")')
    assert step.action.argument == "q" and step.reasoning == "a"


def test_final_answer_wins_over_an_action_in_the_same_reply():
    # seed 000's parser finds FINAL ANSWER anywhere and its loop checks it first
    step = parse_step('THOUGHT: a\nACTION: rag_search("q")\nFINAL ANSWER: guess')
    assert step.final_answer == "guess" and step.action is None and step.reasoning == "a"
    step = parse_step('THOUGHT: a\nFINAL ANSWER: 42 [1]\nACTION: rag_search("q")')
    assert step.final_answer == "42 [1]" and step.action is None
    step = parse_step('REFLECTION: a\nACTION: rag_search("q")\nREFLECTION: b\n'
                      'FINAL ANSWER: Mo-Fr', reflact=True)
    assert step.final_answer == "Mo-Fr" and step.reasoning == "a"
    # an empty FINAL ANSWER does not beat a readable action
    step = parse_step('THOUGHT: a\nACTION: rag_search("q")\nFINAL ANSWER:')
    assert step.ok and step.action.argument == "q"
    # ... but an answer after an invented observation is still cut off
    assert parse_step('ACTION: rag_search("q")\nOBSERVATION: x\nFINAL ANSWER: y').action


@pytest.mark.parametrize("text, argument", [
    ('Action 1: Search["Revenge" by XXXTentacion]', '"Revenge" by XXXTentacion'),
    ('Action: Search["Revenge" by "XXXTentacion"]', '"Revenge" by "XXXTentacion"'),
    ('ACTION: rag_search("The \\"Revenge\\" album")', 'The "Revenge" album'),
    ("ACTION: rag_search('Don't Stop Me Now')", "Don't Stop Me Now"),
    ('ACTION: rag_search("Öffnungszeiten", k=5)', "Öffnungszeiten"),
    ('ACTION: rag_search(query="Öffnungszeiten")', "Öffnungszeiten"),
    ('ACTION: rag_search("cut off mid', "cut off mid"),
    ("Action: Search[Pete Doherty (musician)]", "Pete Doherty (musician)"),
])
def test_the_whole_argument_is_kept(text, argument):
    step = parse_step(text)
    assert step.ok, step.error
    assert step.action.argument == argument


def test_paper_names_map_to_kb_tools_only_when_no_enabled_tool_has_the_name():
    assert parse_step("Action: Search[x]").action.name == "rag_search"
    assert parse_step("Action: Search[x]", tools=["rag_search"]).action.name == "rag_search"
    # a user tool named search is called, in any case the model writes it
    for written in ("search", "Search", "SEARCH"):
        step = parse_step(f"Action: {written}[x]", tools=["search", "rag_search"])
        assert step.action.name == "search"
    assert parse_step("Action: Lookup[x]", tools=["lookup"]).action.name == "lookup"
    assert parse_step("Action: Lookup[x]", tools=["rag_search"]).action.name == "lexical_search"
    # a tool named finish is a tool, not the answer
    step = parse_step("Action: Finish[x]", tools=["finish"])
    assert step.action.name == "finish" and step.final_answer is None
    assert parse_step("Action: Finish[x]", tools=["rag_search"]).final_answer == "x"
    # unlabelled calls of an enabled tool are recognised
    assert parse_step('clock("Berlin")', tools=["clock"]).action.name == "clock"


def test_chinese_labels_with_full_width_colons():
    step = parse_step('思考：我需要营业时间。\n行动：rag_search("营业时间")\n观察：编造的')
    assert step.reasoning == "我需要营业时间。" and step.action.argument == "营业时间"
    assert "编造" not in step.text
    assert parse_step("反思：目标已达成。\n最终答案：周一至周五 9-18 点 [1]",
                      reflact=True).final_answer == "周一至周五 9-18 点 [1]"


def test_final_answer_label_variants():
    for label in ("FINAL ANSWER:", "Final Answer:", "final answer:", "**Final Answer:**",
                  "FINAL_ANSWER:", "Finale Antwort:"):
        assert parse_step(f"THOUGHT: done\n{label} Mo-Fr 9-18 Uhr").final_answer == "Mo-Fr 9-18 Uhr"


def test_lower_case_label_words_inside_text_are_not_labels():
    step = parse_step('THOUGHT: the next action: searching; the final answer: later\n'
                      'ACTION: rag_search("q")')
    assert step.reasoning.startswith("the next action: searching")
    assert step.action.argument == "q"


def test_goal_label_is_read():
    step = parse_step('GOAL: Öffnungszeiten finden\nREFLECTION: a\nACTION: rag_search("q")')
    assert step.goal == "Öffnungszeiten finden" and step.reasoning == "a"


def test_unlabelled_lead_text_is_the_reasoning():
    step = parse_step('I should look up the opening hours.\nACTION: rag_search("Öffnungszeiten")')
    assert step.reasoning == "I should look up the opening hours." and step.reasoning_label is None


@pytest.mark.parametrize("text, code", [
    ("", "empty"),
    ("   \n ", "empty"),
    ("The opening hours are probably 9 to 5.", "no_action"),
    ("THOUGHT: I am thinking.", "no_action"),
    ("THOUGHT: x\nACTION: what should I do", "bad_action"),
    ("THOUGHT: x\nACTION: rag_search()", "empty_argument"),
    ("THOUGHT: x\nFINAL ANSWER:", "empty_answer"),
    ("THOUGHT: x\nAction: Finish[]", "empty_answer"),
])
def test_failures_are_values_with_hints(text, code):
    step = parse_step(text)
    assert step.error is not None and step.error.code == code
    assert step.error.hint and step.error.message


# --- streaming sections ------------------------------------------------------------------
def _route(text: str, size: int, initial: str = "reasoning") -> dict[str, str]:
    router = SectionRouter(initial)
    out: dict[str, str] = {}
    pieces = [text[i:i + size] for i in range(0, len(text), size)] + [""]
    for i, piece in enumerate(pieces):
        for section, part in router.feed(piece, final=i == len(pieces) - 1):
            out[section] = out.get(section, "") + part
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 1000])
def test_router_splits_sections_whatever_the_chunking(size):
    out = _route('REFLECTION: Ich weiß noch nichts.\nACTION: rag_search("Öffnungszeiten")\n'
                 'OBSERVATION: [1] erfunden', size)
    assert out["reasoning"].strip() == "Ich weiß noch nichts."
    assert out["action"].strip() == 'rag_search("Öffnungszeiten")'
    assert "erfunden" not in "".join(out.values())


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_router_answer_section_and_label_at_start_of_final_reply(size):
    out = _route("REFLECTION: fertig\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]", size, initial="answer")
    assert out["answer"] == "Mo-Fr 9-18 Uhr [1]"
    assert out["reasoning"].strip() == "fertig"
    assert _route("Mo-Fr 9-18 Uhr [1]", size, initial="answer") == {"answer": "Mo-Fr 9-18 Uhr [1]"}


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_router_marks_where_each_label_opens(size):
    text = 'REFLECTION: weiß nichts\nACTION: rag_search("x")'
    router = SectionRouter()
    kinds = []
    pieces = [text[i:i + size] for i in range(0, len(text), size)] + [""]
    for i, piece in enumerate(pieces):
        kinds += [p for s, p in router.feed(piece, final=i == len(pieces) - 1) if s == "label"]
    assert kinds == ["reflection", "action"]
    assert [text[s:s + 6] for s in router.label_starts] == ["REFLEC", "ACTION"]
