"""Structured output: a finished answer written as JSON in a requested shape, enforced by a
grammar on the embedded model and forwarded as `response_format` to OpenAI-compatible
servers."""

from __future__ import annotations

import json

import jsonschema
import pytest
from llm_fault_server import FaultServer, finish_chunk, sse, text_chunk, usage_chunk

from agentmodes.errors import ConfigError
from agentmodes.llm import load_llm
from agentmodes.llm.grammars import json_grammar
from agentmodes.llm.openai_compat import OpenAICompatModel
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.structured_answer import (StructuredOutputError, check_schema, schema_of,
                                          structure_answer)

SCHEMA = {"type": "object", "properties": {"tage": {"type": "string"},
                                           "von": {"type": "integer"},
                                           "bis": {"type": "integer"}},
          "required": ["tage", "von", "bis"]}
FORMAT = {"type": "json_schema", "json_schema": {"name": "hours", "schema": SCHEMA}}
QUESTION = "Wann hat die DG Agentur geöffnet?"
DONE = {"done": True, "full_response": "Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr "
                                       "geöffnet [1].",
        "sources": [{"title": "Kontakt", "text": "montags bis freitags von 9 bis 18 Uhr"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0, "calls": 1}}


def test_the_answer_becomes_json_and_the_prose_is_kept():
    reply = '```json\n{"tage": "Montag bis Freitag", "von": 9, "bis": 18}\n```'
    done = structure_answer(ScriptedModel([reply]), QUESTION, DONE, FORMAT)
    assert json.loads(done["full_response"]) == {"tage": "Montag bis Freitag", "von": 9,
                                                 "bis": 18}
    assert done["prose_answer"] == DONE["full_response"] and done["usage"]["calls"] == 2


@pytest.mark.parametrize("reply, message", [
    ("Montag bis Freitag.", "did not reply with JSON"),
    ('{"tage": "Montag", "von": "neun", "bis": 18}', "at von"),
    ('{"tage": "Montag"}', "does not match the schema"),
])
def test_a_reply_outside_the_schema_is_an_error(reply, message):
    with pytest.raises(StructuredOutputError, match=message):
        structure_answer(ScriptedModel([reply]), QUESTION, DONE, FORMAT)


def test_json_object_needs_an_object_and_bad_formats_are_refused():
    done = structure_answer(ScriptedModel(['{"a": 1}']), QUESTION, DONE, {"type": "json_object"})
    assert done["structured"] == {"a": 1}
    with pytest.raises(StructuredOutputError, match="not an object"):
        structure_answer(ScriptedModel(["[1, 2]"]), QUESTION, DONE, {"type": "json_object"})
    with pytest.raises(ConfigError, match="schema is invalid"):
        check_schema(schema_of({"type": "json_schema",
                                "json_schema": {"schema": {"type": "nonsense"}}}))
    with pytest.raises(ConfigError):
        schema_of({"type": "json_schema", "json_schema": "nope"})


def test_an_openai_compatible_backend_gets_the_response_format():
    server = FaultServer()
    try:
        server.play(sse([text_chunk('{"tage": "Mo-Fr", '), text_chunk('"von": 9, "bis": 18}'),
                         finish_chunk(), usage_chunk(20, 9)]))
        model = OpenAICompatModel("m", base_url=server.url, api_key="k", max_retries=0)
        done = structure_answer(model, QUESTION, DONE, FORMAT)
        model.close()
    finally:
        server.close()
    assert done["structured"] == {"tage": "Mo-Fr", "von": 9, "bis": 18}
    assert server.requests[0]["response_format"] == FORMAT


def test_the_grammar_follows_the_schema():
    grammar = json_grammar(FORMAT)
    assert '"\\"tage\\""' in grammar and "root ::=" in grammar
    assert json_grammar({"type": "text"}) is None
    with pytest.raises(ConfigError, match="not supported"):
        json_grammar({"type": "regex"})


@pytest.mark.llm
def test_the_embedded_model_writes_json_in_the_schemas_shape():
    model = load_llm("local")
    try:
        done = structure_answer(model, QUESTION, DONE, FORMAT)
    finally:
        model.close()
    jsonschema.validate(done["structured"], SCHEMA)        # also checked inside
    assert set(done["structured"]) >= {"tage", "von", "bis"}
