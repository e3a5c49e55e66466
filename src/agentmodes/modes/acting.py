"""One action of a step mode: run the tool, stream its observation, never raise.

What the loop acts on is injected: any `Toolbox` (the knowledge base's tools from
tools/registry.py, or an environment such as ALFWorld behind the same four methods). A tool
either returns a ToolResult when called, or streams with `stream(argument)`: text pieces
and Sources as they are produced, then the ToolResult. Each piece becomes an
`observation_delta` event while the tool works (seeds 000/002); a search streams its hits
source by source, each numbered in the run's numbering the moment it arrives.

The observation also says what the action changed, for seed 004's rule heuristic
(evaluators/heuristics.py): `effect` (did it have one: a search that found nothing new, an
unknown tool or a failure did not) and `location` (where the actor is, if the environment
has places). A tool or environment that knows better sets both on its ToolResult.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generator, Optional, Protocol

from ..llm.base import ToolSpec
from ..parsing import Action
from ..tools.base import Source, Tool, ToolResult
from ..tools.observation import format_sources
from .sources import SourceBook

_UNKNOWN = {"de": "Unbekanntes Tool {name!r}. Verfügbare Tools: {names}.",
            "en": "Unknown tool {name!r}. Available tools: {names}.",
            "zh": "未知工具 {name!r}。可用工具：{names}。"}
_FAILED = {"de": "Das Tool {name} ist fehlgeschlagen: {err}",
           "en": "The tool {name} failed: {err}",
           "zh": "工具 {name} 执行失败：{err}"}


class Toolbox(Protocol):
    """What the loop needs from what it acts on (tools/registry.ToolSet is one)."""

    @property
    def names(self) -> list[str]: ...

    def get(self, name: str) -> Optional[Tool]: ...

    def search_tool(self) -> Optional[Tool]: ...

    def specs(self) -> list[ToolSpec]: ...


@dataclass(slots=True)
class Observation:
    result: ToolResult
    text: str                     # what the model reads (sources in the run's numbering)
    effect: bool                  # the action changed something (seed 004's "valid")
    location: Optional[str] = None


def perform(tools: Toolbox, action: Action, book: SourceBook, lang: str
            ) -> Generator[str, None, Observation]:
    """Run `action`; yields observation text pieces as they come, returns the Observation.
    Whatever goes wrong (unknown tool, exception) is an observation the model can read."""
    tool = tools.get(action.name)
    if tool is None:
        msg = _UNKNOWN.get(lang, _UNKNOWN["en"]).format(name=action.name,
                                                        names=", ".join(tools.names))
        yield msg
        return Observation(ToolResult(msg, error=True), msg, effect=False)
    before = len(book)
    lines: list[str] = []
    streamed: list[Source] = []
    result: Optional[ToolResult] = None
    try:
        stream = getattr(tool, "stream", None)
        if stream is None:
            result = tool(action.argument)
        else:
            for piece in stream(action.argument):
                if isinstance(piece, ToolResult):
                    result = piece
                    break
                text = _number(piece, book, lang) if isinstance(piece, Source) else str(piece)
                if isinstance(piece, Source):
                    streamed.append(piece)
                yield ("\n" if lines and isinstance(piece, Source) else "") + text
                lines.append(text)
            if result is None:
                raise RuntimeError("the tool's stream ended without a result")
    except Exception as err:  # noqa: BLE001 - a failing tool must not end the run
        msg = _FAILED.get(lang, _FAILED["en"]).format(name=action.name,
                                                      err=str(err) or type(err).__name__)
        yield ("\n" if lines else "") + msg
        return Observation(ToolResult(msg, error=True), msg, effect=False)
    if result.sources:
        rest = [s for s in result.sources if s not in streamed]
        for src in rest:
            line = _number(src, book, lang)
            yield ("\n" if lines else "") + line
            lines.append(line)
        text = "\n".join(lines)
    elif lines:
        text = "".join(lines)
    else:
        text = result.text
        if text:
            yield text
    effect = result.effect
    if effect is None:
        effect = not result.error and (not result.sources or len(book) > before)
    return Observation(result, text, effect, result.location)


def _number(src: Source, book: SourceBook, lang: str) -> str:
    return format_sources([src], book.add([src]), lang)

