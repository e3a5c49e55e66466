"""What Reflection and Reflexion share: prompt files, one LLM call, code extraction, attempts.

Both loops make single, non-agentic LLM calls (draft, critique, refine, self-reflect) whose
prompts live as data in prompts/selfcorrect/<name>.<lang>.md (English and German). Keeping the
plumbing here keeps each loop's file down to its control flow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from ..events import Usage
from ..llm.base import ChatModel, GenerationOptions
from ..llm.completion import collect
from ..prompts.language import detect_language

PROMPT_DIR = ("prompts", "selfcorrect")

def resolve_language(language: str, text: str) -> str:
    """The prompt language: as set, or for "auto" the task's own (the chat modes' detector)."""
    return detect_language(text or "") if language == "auto" else language


@lru_cache(maxsize=None)
def load_prompt(name: str, language: str = "en") -> str:
    base = resources.files("agentmodes").joinpath(*PROMPT_DIR)
    path = base.joinpath(f"{name}.{language}.md")
    if not path.is_file():
        path = base.joinpath(f"{name}.en.md")
    return path.read_text(encoding="utf-8")


def render(template: str, **fields: str) -> str:
    """Fill {name} placeholders; other braces (JSON examples, code) stay as they are."""
    for key, value in fields.items():
        template = template.replace("{" + key + "}", str(value))
    return template.strip() + "\n"


def prompt(name: str, language: str, **fields: str) -> str:
    return render(load_prompt(name, language), **fields)


@dataclass(slots=True)
class Reply:
    text: str
    usage: Usage


def complete(llm: ChatModel, content: str, *, max_tokens: int = 768,
             grammar: Optional[str] = None, system: Optional[str] = None) -> Reply:
    """One user-turn call; the grammar is only sent to backends that enforce it."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": content})
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0,
                                grammar=grammar if getattr(llm, "supports_grammar", False) else None)
    done = collect(llm.stream(messages, options))
    usage = done.usage
    if not usage.calls:
        usage = Usage(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, 1)
    return Reply(done.text.strip(), usage)


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(text: str) -> str:
    """The program inside a model's reply: the fenced block that defines something (the
    longest such block), else the longest fenced block, else the reply without prose lines
    around it. Small models often forget the closing fence; an open fence runs to the end."""
    blocks = [(lang.lower(), body.strip("\n")) for lang, body in _FENCE.findall(text or "")]
    blocks = [(lang, body) for lang, body in blocks if body.strip()]
    if blocks:
        python = [b for lang, b in blocks if lang in ("", "python", "py", "python3")] or \
                 [b for _, b in blocks]
        defining = [b for b in python if re.search(r"^\s*(def|class|import|from)\s", b, re.M)]
        return max(defining or python, key=len).rstrip() + "\n"
    lines = (text or "").strip("\n").splitlines()
    start = next((i for i, line in enumerate(lines)
                  if re.match(r"\s*(def|class|import|from|@)\b", line)), 0)
    return "\n".join(lines[start:]).rstrip() + "\n"


def unit_test_grammar(entry_point: str, n: int) -> Optional[str]:
    """GBNF for 1..n lines `assert <entry_point>(...`: without it the embedded 135M model
    writes prose instead of asserts (5 of 5 HumanEval tasks fell back to the load check),
    and the self-test evaluator then judges nothing. Backends without grammars ignore it."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry_point or ""):
        return None
    more = " ".join(['("\\n" test)?'] * max(0, n - 1))
    return (f'root ::= test {more}\n'
            f'test ::= "assert {entry_point}(" [^\\n]{{4,160}}\n')


def generate_unit_tests(llm: ChatModel, task: str, *, entry_point: str = "", n: int = 5,
                        max_tokens: int = 512) -> tuple[list[str], Usage]:
    """Reflexion's third evaluator kind: the model writes n asserts for the function it is
    about to implement. Only parsable asserts (that call `entry_point`, when known) are kept;
    with none usable and a known function name, a load check remains (the code runs and
    defines the function), so syntax errors and missing names are still caught."""
    from ..evaluators.unit_tests import parse_test_lines

    reply = complete(llm, prompt("unit_tests", resolve_language("auto", task), n=str(n),
                                 entry_point=entry_point or "the function", task=task.strip()),
                     max_tokens=max_tokens, grammar=unit_test_grammar(entry_point, n))
    tests = parse_test_lines(reply.text, entry_point, limit=n)
    if not tests and entry_point:
        tests = [f"assert callable({entry_point})"]
    return tests, reply.usage


def usage_of(value: Any) -> Usage:
    """A Usage from whatever a component reports (Usage, its dict, or nothing)."""
    if isinstance(value, Usage):
        return value
    if isinstance(value, dict):
        return Usage(int(value.get("prompt_tokens", 0)), int(value.get("completion_tokens", 0)),
                     int(value.get("cached_tokens", 0)), int(value.get("calls", 0)))
    return Usage()


@dataclass(slots=True)
class Attempt:
    """One output of an actor: what the loop judges, refines and finally returns.

    output: the answer text or the program; context: text the reviewer and refiner need to
    judge it (an agent's sources); trajectory: how it was produced, rendered for the
    self-reflection prompt; run: the agent's RunResult, for run-reading evaluators.
    """

    output: str
    usage: Usage = field(default_factory=Usage)
    context: str = ""
    trajectory: str = ""
    sources: list[Any] = field(default_factory=list)
    run: Any = None
    raw: str = ""
    plan: list[str] = field(default_factory=list)     # Plan-and-Solve's plan, if any


def evaluate_attempt(evaluator: Any, task: Any, attempt: Attempt) -> Any:
    """Judge an attempt: run-reading evaluators (wants_run) get the agent run, the others
    the output. A crashing evaluator is a failed evaluation that says why, not a lost run."""
    from ..errors import AgentModesError
    from ..evaluators.base import Evaluation

    wants_run = getattr(evaluator, "wants_run", False) and attempt.run is not None
    try:
        return evaluator(task, attempt.run if wants_run else attempt.output)
    except AgentModesError:
        raise
    except Exception as err:
        return Evaluation(False, 0.0, f"the evaluator failed: {type(err).__name__}: {err}",
                          {"error": repr(err)})


def sources_as_dicts(sources: list[Any]) -> list[dict]:
    out = []
    for s in sources:
        if isinstance(s, dict):
            out.append(s)
        elif hasattr(s, "as_dict"):
            out.append(s.as_dict())
        else:
            out.append({"source": str(s)})
    return out


def render_sources(sources: list[Any], *, max_chars: int = 600) -> str:
    lines = []
    for n, s in enumerate(sources_as_dicts(sources), start=1):
        title = s.get("title") or s.get("source") or ""
        text = " ".join(str(s.get("text") or "").split())[:max_chars]
        lines.append(f"[{n}] {title}: {text}".rstrip(": "))
    return "\n".join(lines)
