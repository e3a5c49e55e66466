"""Structured output for a finished answer: the run's answer as JSON in a requested shape.

OpenAI clients ask for it with `response_format` ({"type": "json_schema", ...} or
{"type": "json_object"}); LangChain's `with_structured_output` does so by default. The
agent still runs as its chatbot is set up (searching, reasoning, citing); afterwards one
more LLM call writes the answer and its sources as JSON. The backend enforces the shape
where it can: the embedded llama.cpp model through a grammar made from the schema, an
OpenAI-compatible server through the same `response_format`. What comes back is parsed
and checked against the schema here as well, because a backend may ignore the field; a
reply that is not valid JSON in the schema's shape fails the run with a one-line reason
rather than handing a client text it cannot parse.
"""

from __future__ import annotations

import json
from typing import Any

from . import prompts
from .errors import AgentModesError, ConfigError
from .events import Event, Usage
from .llm.base import GenerationOptions
from .llm.completion import collect
from .modes.self_correction import render_sources

MAX_JSON_TOKENS = 512


class StructuredOutputError(AgentModesError):
    """The model's reply was not JSON in the requested shape."""


def schema_of(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a response_format asks for (None: any JSON object)."""
    kind = response_format.get("type")
    if kind == "json_object":
        return None
    if kind != "json_schema":
        raise ConfigError(f"response_format type {kind!r} is not supported here "
                          "(use json_object or json_schema)")
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
        raise ConfigError("response_format.json_schema must be an object with a `schema`")
    return spec.get("schema") or {"type": "object"}


def check_schema(schema: dict[str, Any] | None) -> None:
    """Refuse a malformed schema before any run starts (ConfigError)."""
    if schema is None:
        return
    import jsonschema
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        raise ConfigError(f"response_format's JSON schema is invalid: {err.message}") from None


def structure_answer(llm: Any, question: str, done: Event,
                     response_format: dict[str, Any]) -> Event:
    """The run's done event with `full_response` replaced by the JSON text (and the prose
    answer kept as `prose_answer`, the parsed value as `structured`)."""
    schema = schema_of(response_format)
    answer = str(done.get("full_response") or "")
    # One English instruction for every chatbot: it is about the format, and the values are
    # written in the answer's own language.
    prompt = prompts.fill(prompts.load("structured_answer", "en"),
                          SCHEMA=json.dumps(schema or {"type": "object"}, ensure_ascii=False),
                          QUESTION=question, ANSWER=answer,
                          SOURCES=render_sources(list(done.get("sources") or [])) or "(none)")
    options = GenerationOptions(max_tokens=MAX_JSON_TOKENS, temperature=0.0,
                                response_format=response_format)
    completion = collect(llm.stream([{"role": "user", "content": prompt}], options))
    value = _parse(completion.text)
    if schema is not None:
        _validate(value, schema)
    elif not isinstance(value, dict):
        raise StructuredOutputError("the model's reply is JSON but not an object, as "
                                    "response_format json_object requires")
    total = Usage(**(done.get("usage") or {})) + completion.usage
    return {**done, "full_response": json.dumps(value, ensure_ascii=False),
            "prose_answer": answer, "structured": value, "usage": total.as_dict()}


def _parse(text: str) -> Any:
    text = text.strip()
    if text.startswith("```"):                  # a fenced reply from a chatty backend
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start:end + 1])
            except ValueError:
                pass
    raise StructuredOutputError(f"the model did not reply with JSON: {text[:120]!r}")


def _validate(value: Any, schema: dict[str, Any]) -> None:
    import jsonschema
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the reply"
        raise StructuredOutputError(f"the model's JSON does not match the schema at {where}: "
                                    f"{error.message[:200]}")
