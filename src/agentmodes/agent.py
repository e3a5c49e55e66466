"""Agent: a question in, a stream of events (or one RunResult) out.

    agent = Agent(knowledge=KnowledgeBase.open("kb.db"),
                  settings=ChatbotSettings(agent_mode="reflact", task_type="multihop"))
    for event in agent.stream("Wann hat die DG Agentur geöffnet?"): ...
    result = agent.run("...")

With llm=None the embedded default model is loaded on first use (llm/registry.py), so
building an Agent is cheap and a test can pass a ScriptedModel instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

from . import prompts
from .errors import AgentModesError, ConfigError
from .events import Event, Usage
from .llm.base import ChatModel, Message
from .modes.act import ACT
from .modes.compose import Composer
from .modes.loop import Episode, step_grammar
from .modes.plan_and_solve import PLAN_AND_SOLVE
from .modes.spec import ModeSpec
from .modes.react import REACT
from .modes.reflact import REFLACT
from .settings import ChatbotSettings
from .tools.base import Source, Tool
from .tools.registry import build_tools

STEP_MODES: dict[str, ModeSpec] = {m.name: m for m in (ACT, REACT, REFLACT, PLAN_AND_SOLVE)}
HistoryTurn = Union[tuple[str, str], Message]


@dataclass(slots=True)
class RunResult:
    answer: str
    sources: list[Source]
    steps: list[Event]             # the trace: every event except answer/reasoning deltas
    usage: Usage
    iterations: int
    adaptive_exit: bool
    goal: str
    mode: str
    elapsed_s: float
    done: dict = field(default_factory=dict)   # the done event as streamed


class Agent:
    def __init__(self, llm: Optional[ChatModel] = None, knowledge: Optional[Any] = None,
                 settings: Optional[ChatbotSettings] = None,
                 tools: Optional[Iterable[Tool]] = None):
        self._llm = llm
        self.knowledge = knowledge
        self.settings = settings or ChatbotSettings()
        self.extra_tools = list(tools or [])
        self._last: Optional[Episode] = None
        # The answer composer judges sentences with the KB's own embedder (loaded when the
        # first answer is composed; without one it compares words and numbers only).
        self.composer = Composer(embedder=self._embedder,
                                 language=getattr(knowledge, "language", "auto"))

    def _embedder(self) -> Any:
        return self.knowledge.embedder

    @property
    def llm(self) -> ChatModel:
        if self._llm is None:
            from .llm.registry import load_llm     # heavy (llama.cpp): load on first use
            self._llm = load_llm(None)
        return self._llm

    def prompt(self, question: str) -> tuple[ModeSpec, str, Any, str]:
        """The mode, language, tools and system prompt of a run on `question`: what the
        model is told (the answer composer also reads it, to drop text copied from it, and
        `bench answers --recompose` rebuilds it for a logged run)."""
        settings = self.settings
        spec = STEP_MODES.get(settings.agent_mode)
        if spec is None:
            raise ConfigError(f"unknown agent mode {settings.agent_mode!r} "
                              f"(choose {', '.join(STEP_MODES)})")
        lang = prompts.choose_language(settings, question)
        tools = build_tools(settings, self.knowledge, lang=lang, extra=self.extra_tools)
        system = prompts.system_prompt(spec.name, settings, lang,
                                       tools.listing(lang, include_respond=spec.lists_respond))
        return spec, lang, tools, system

    def episode(self, query: str, history: Optional[Sequence[HistoryTurn]] = None) -> Episode:
        """Validate the input and set up one run (prompt, tools, budget) without starting it."""
        question = (query or "").strip()
        if not question:
            raise AgentModesError("the question is empty: ask something, e.g. "
                                  "agentmodes ask \"What are the opening hours?\"")
        settings = self.settings
        spec, lang, tools, system = self.prompt(question)
        llm = self.llm
        return Episode(spec, llm, tools, question=question, system=system,
                       max_iterations=settings.max_iterations, lang=lang,
                       history=_messages(history), adaptive=settings.adaptive_iteration,
                       threshold=settings.high_confidence_threshold,
                       grammar=step_grammar(spec, llm, tools.names),
                       require_search=settings.require_search, composer=self.composer)

    def stream(self, query: str, history: Optional[Sequence[HistoryTurn]] = None
               ) -> Iterator[Event]:
        """Events of one run; bad input raises here, before the first event."""
        self._last = self.episode(query, history)
        return self._events(self._last, query)

    @staticmethod
    def _events(episode: Any, query: str) -> Iterator[Event]:
        """The episode's events, traced by OpenTelemetry when it is configured."""
        from . import telemetry
        return telemetry.traced(episode.run(), model=getattr(episode.llm, "name", ""),
                                mode=episode.spec.name, question=query)

    def run(self, query: str, history: Optional[Sequence[HistoryTurn]] = None) -> RunResult:
        episode = self.episode(query, history)
        self._last = episode
        steps: list[Event] = []
        done: dict = {}
        for event in self._events(episode, query):
            if event.get("done"):
                done = event
            elif "delta" not in event:
                steps.append(event)
        return RunResult(answer=done["full_response"], sources=list(episode.book.sources),
                         steps=steps, usage=episode.usage, iterations=episode.iterations,
                         adaptive_exit=episode.adaptive_exit, goal=episode.goal,
                         mode=episode.spec.name, elapsed_s=done["elapsed_s"], done=done)


def _messages(history: Optional[Sequence[HistoryTurn]]) -> list[Message]:
    out: list[Message] = []
    for turn in history or ():
        role, content = (turn["role"], turn["content"]) if isinstance(turn, dict) else turn
        if role not in ("user", "assistant", "system"):
            raise ConfigError(f"unknown history role {role!r} (use user or assistant)")
        out.append({"role": role, "content": str(content)})
    return out
