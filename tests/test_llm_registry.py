"""load_llm's accepted forms and the step grammars' shape (no model needed)."""

from __future__ import annotations

import json

import pytest

from agentmodes.errors import ConfigError
from agentmodes.llm import GenerationOptions, ScriptedModel, collect, load_llm, step_grammar
from agentmodes.llm.llama_sampling import forced_opening


def test_scripted_spec_replays_a_json_file(tmp_path):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["ACTION: rag_search(\"hours\")", "ACTION: respond(\"9-18\")"]))
    model = load_llm(f"scripted:{path}")
    assert isinstance(model, ScriptedModel)
    assert collect(model.stream([{"role": "user", "content": "q"}])).text.endswith('"hours")')
    assert collect(model.stream([{"role": "user", "content": "q"}],
                                GenerationOptions(stop=['"9']))).text == "ACTION: respond("


@pytest.mark.parametrize("content, message", [
    ("not json", "is not readable JSON"),
    ("{}", "must hold a non-empty JSON list"),
    ("[]", "must hold a non-empty JSON list"),
])
def test_bad_scripted_file_is_a_config_error(tmp_path, content, message):
    path = tmp_path / "replies.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_llm(f"scripted:{path}")


@pytest.mark.parametrize("spec, message", [
    ("gpt-4", "unknown LLM 'gpt-4'"), ("openai:", "needs a model name"),
    ("scripted:", "needs a JSON file"), ("scripted:/no/such.json", "not found")])
def test_bad_specs_are_one_line_config_errors(spec, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_llm(spec)
    assert "\n" not in str(err.value)


def test_openai_spec_reads_base_url_from_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    model = load_llm("openai:qwen2.5")
    assert (model.name, model.base_url, model.supports_tools) == (
        "openai:qwen2.5", "http://127.0.0.1:9/v1", True)
    model.close()


def test_step_grammars_offer_only_the_enabled_tools():
    react = step_grammar("react", ["rag_search", "respond"])
    assert 'root ::= "THOUGHT: "' in react and 'tool ::= "rag_search"\n' in react
    assert "respond" not in react                 # ReAct ends with FINAL ANSWER
    reflact = step_grammar("ReflAct", ["lexical_search"])
    assert 'root ::= "REFLECTION: "' in reflact and '"lexical_search"' in reflact
    act = step_grammar("act", ["rag_search"])     # respond is always there to end ACT
    assert 'root ::= "ACTION: "' in act and '"respond(\\""' in act
    only_final = step_grammar("reflact", [])
    assert "ACTION" not in only_final and "FINAL ANSWER" in only_final


@pytest.mark.parametrize("mode, tools, message", [
    ("reflexion", ["rag_search"], "no step grammar for mode 'reflexion'"),
    ("react", ['search"x'], "cannot appear in an ACTION")])
def test_step_grammar_rejects_what_it_cannot_express(mode, tools, message):
    with pytest.raises(ConfigError, match=message):
        step_grammar(mode, tools)


def test_forced_opening_is_the_label_every_step_starts_with():
    assert forced_opening(step_grammar("reflact", ["rag_search"])) == "REFLECTION:"
    assert forced_opening(step_grammar("act", ["rag_search"])) == "ACTION:"
    assert forced_opening('x ::= "a"\nroot ::= "VERDICT:" x') == "VERDICT:"
    # nothing is forced where the grammar offers a choice at the start
    assert forced_opening('root ::= "A" x | "B"\nx ::= "c"') == ""
    assert forced_opening('root ::= ("A" | "B")') == ""
    assert forced_opening('root ::= [A-Z]+') == ""
