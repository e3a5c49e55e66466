"""GBNF grammars for each mode's step format (llama.cpp grammar syntax).

A 135M model cannot be trusted to follow a format from the prompt alone; a grammar makes a
malformed step impossible instead of unlikely. The formats are the seeds' (000, 002):

    ReAct    THOUGHT: <one line>\nACTION: tool("arg")    or  THOUGHT: ...\nFINAL ANSWER: ...
    ReflAct  REFLECTION: <one line>\nACTION: tool("arg")  or  REFLECTION: ...\nFINAL ANSWER: ...
    ACT      ACTION: tool("arg")   where respond("answer") ends the run

Why the shapes are as they are:
- Every free-text part is one line with a length bound, so generation cannot run away and a
  label can only start a line: reasoning cannot swallow the ACTION, and nothing after the
  step (an invented OBSERVATION) can be produced, since a complete grammar only admits the
  end-of-generation token.
- The tool name is an alternation of the enabled tools only, so the model cannot call a tool
  that is not there. In ReAct/ReflAct the run ends with FINAL ANSWER, so `respond` is not
  offered as an action there; in ACT it is always offered, else the run could never end.
- Bounds use GBNF's {m,n}, which llama.cpp expands into nested optional rules; a few hundred
  is cheap per token (measured by `agentmodes bench wellformed`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from ..errors import ConfigError

REASONING_LABELS = {"react": "THOUGHT", "reflact": "REFLECTION"}
STEP_MODES = ("act", "react", "reflact")

MAX_REASONING_CHARS = 400   # one reflection or thought
MAX_ARGUMENT_CHARS = 200    # a search query
MAX_ANSWER_CHARS = 800      # a final answer (one paragraph)

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def step_grammar(mode: str, tools: Iterable[str]) -> str:
    """The GBNF grammar for one step of `mode` ("act", "react", "reflact") with `tools`."""
    mode = (mode or "").lower()
    if mode not in STEP_MODES:
        raise ConfigError(f"no step grammar for mode {mode!r}; known: {', '.join(STEP_MODES)}")
    names = _tool_names(tools)
    if mode == "act":
        searches = [n for n in names if n != "respond"]
        calls = ['"respond(\\"" answer "\\")"']
        if searches:
            calls.insert(0, 'tool "(\\"" arg "\\")"')
        rules = [f'root ::= "ACTION: " ({" | ".join(calls)})']
        if searches:
            rules.append(_alternation("tool", searches))
        rules += [_line("arg", MAX_ARGUMENT_CHARS, quoted=True),
                  _line("answer", MAX_ANSWER_CHARS, quoted=True)]
        return "\n".join(rules) + "\n"

    searches = [n for n in names if n != "respond"]
    label = REASONING_LABELS[mode]
    ending = ['"FINAL ANSWER: " answer']
    if searches:
        ending.insert(0, '"ACTION: " tool "(\\"" arg "\\")"')
    rules = [f'root ::= "{label}: " reasoning "\\n" ({" | ".join(ending)})',
             _line("reasoning", MAX_REASONING_CHARS)]
    if searches:
        rules += [_alternation("tool", searches), _line("arg", MAX_ARGUMENT_CHARS, quoted=True)]
    rules.append(_line("answer", MAX_ANSWER_CHARS))
    return "\n".join(rules) + "\n"


MAX_COMMAND_CHARS = 120     # one environment command ("put mug 1 in/on coffeemachine 1")


def command_grammar(mode: str) -> str:
    """The step grammar in a text environment (ALFWorld), where the ACTION is a free-text
    command and the game, not a FINAL ANSWER, ends the episode: ReAct's THOUGHT is optional
    (the ReAct paper's thoughts are sparse), ReflAct's REFLECTION comes before every command
    (the ReflAct paper's format), ACT writes the command alone."""
    mode = (mode or "").lower()
    if mode not in STEP_MODES:
        raise ConfigError(f"no step grammar for mode {mode!r}; known: {', '.join(STEP_MODES)}")
    action = '"ACTION: " command'
    if mode == "act":
        root = f"root ::= {action}"
    else:
        label = REASONING_LABELS[mode]
        reasoning = f'"{label}: " reasoning "\\n"'
        root = f"root ::= ({reasoning})? {action}" if mode == "react" else \
            f"root ::= {reasoning} {action}"
    rules = [root, "command ::= [a-z] [^\\n]{0,%d}" % (MAX_COMMAND_CHARS - 1)]
    if mode != "act":
        rules.append(_line("reasoning", MAX_REASONING_CHARS))
    return "\n".join(rules) + "\n"


def _tool_names(tools: Iterable[str]) -> list[str]:
    names: list[str] = []
    for name in tools:
        if not _TOOL_NAME.match(name or ""):
            raise ConfigError(f"tool name {name!r} cannot appear in an ACTION "
                              "(letters, digits and _ only)")
        if name not in names:
            names.append(name)
    return names


def _alternation(rule: str, words: list[str]) -> str:
    return f"{rule} ::= " + " | ".join(f'"{w}"' for w in words)


def _line(rule: str, max_chars: int, *, quoted: bool = False) -> str:
    """One line of 1..max_chars characters; quoted text also excludes the double quote."""
    # The first character is not a space so the text does not start with padding.
    body = '[^"\\n]' if quoted else "[^\\n]"
    first = '[^" \\n]' if quoted else "[^ \\n]"
    return f"{rule} ::= {first} {body}{{0,{max_chars - 1}}}"


def json_grammar(response_format: dict[str, Any]) -> str | None:
    """The GBNF grammar for an OpenAI `response_format`: any JSON object for "json_object",
    the schema's shape for "json_schema", None for "text".

    llama-cpp-python's own converter is used (it covers types, required properties, enums,
    arrays, nested objects, $ref and anyOf), since writing a JSON Schema compiler is not
    this project's job; a schema it cannot convert is a one-line ConfigError.
    """
    kind = (response_format or {}).get("type", "text")
    if kind == "text":
        return None
    try:
        from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf
    except ImportError:
        raise ConfigError("structured output on the embedded model needs llama-cpp-python "
                          "(pip install 'agentmodes[local]')") from None
    if kind == "json_object":
        return JSON_GBNF
    if kind != "json_schema":
        raise ConfigError(f"response_format type {kind!r} is not supported "
                          "(use text, json_object or json_schema)")
    schema = ((response_format.get("json_schema") or {}).get("schema")) or {"type": "object"}
    try:
        return json_schema_to_gbnf(json.dumps(schema))
    except Exception as err:   # the converter raises bare exceptions on what it cannot do
        raise ConfigError(f"this JSON schema cannot be turned into a grammar: "
                          f"{type(err).__name__}: {err}") from None
