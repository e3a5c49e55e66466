"""Prompt templates as files (`de/*.md`, `en/*.md`, `zh/*.md`), and a step mode's system prompt.

The default prompts are the seeds' (ACT and ReflAct verbatim in German, faithful English and
Chinese versions; ReAct written for all three; the step labels REFLECTION, THOUGHT, ACTION,
FINAL ANSWER stay English in every language, as in the German seeds, because the grammar
and the parser read them). The seeds' assembly rules apply: the chatbot's
`system_prompt` is prepended, the tool-availability block lists the tools enabled for this
bot, and `{PROJECT_URL}` is replaced before use.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Iterable

from .language import detect_language

if TYPE_CHECKING:  # pragma: no cover
    from ..settings import ChatbotSettings

LANGUAGES = ("de", "en", "zh")
__all__ = ["load", "hints", "choose_language", "system_prompt", "tool_block", "fill",
           "detect_language", "LANGUAGES"]


@lru_cache(maxsize=None)
def load(name: str, lang: str) -> str:
    """The text of prompts/<lang>/<name>.md (without the trailing newline)."""
    if lang not in LANGUAGES:
        lang = "en"
    return (resources.files(__package__) / lang / f"{name}.md").read_text("utf-8").rstrip("\n")


@lru_cache(maxsize=None)
def hints(lang: str) -> dict[str, str]:
    """Parse-error hints by ParseError.code, from hints.md ("code: text" lines)."""
    out = {}
    for line in load("hints", lang).splitlines():
        code, _, text = line.partition(":")
        if text:
            out[code.strip()] = text.strip()
    return out


def fill(template: str, **values: str) -> str:
    """Replace {NAME} placeholders; other braces (JSON examples, user text) stay untouched."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def choose_language(settings: "ChatbotSettings", query: str) -> str:
    return settings.language if settings.language in LANGUAGES else detect_language(query)


def tool_block(tools: Iterable[tuple[str, str, str]], lang: str) -> str:
    """The tool-availability block; tools are (name, parameter, description) triples."""
    lines = "\n".join(f"- {name}({param}): {desc}" for name, param, desc in tools)
    return fill(load("tools", lang), TOOLS=lines)


def system_prompt(mode: str, settings: "ChatbotSettings", lang: str,
                  tools: Iterable[tuple[str, str, str]]) -> str:
    """system_prompt + the mode's prompt (or its override) + the enabled tools."""
    override = getattr(settings, f"{mode.replace('-', '_')}_system_prompt", None)
    parts = [settings.system_prompt.strip(), (override or load(mode, lang)).strip(),
             tool_block(tools, lang)]
    text = "\n\n".join(p for p in parts if p)
    return fill(text, PROJECT_URL=settings.project_url)
