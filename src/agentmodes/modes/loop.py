"""The one loop the step modes (ACT, ReAct, ReflAct) share.

A mode is a ModeSpec: its prompt, its labels, its stop rule. Everything else lives here once:
iterations up to the budget, streaming deltas by section, parsing, tool execution (errors and
unknown tools become observations), parse-error feedback and recovery, repeat detection,
the adaptive exit on a confident search, the best-effort answer at the limit, run-wide
source numbering with citation cleanup, token usage on every event after an LLM call, and
the answer composer (modes/compose.py) where the final answer is produced.

The loop is on the hot path of every benchmark: plain dicts for events, regexes compiled
once, no copies of the growing message list (it is append-only, which also lets a backend
reuse its KV cache for the shared prefix).
"""

from __future__ import annotations

import time
from typing import Iterator, Optional, Sequence

from .. import prompts
from ..errors import LLMError
from ..events import Event, Usage
from ..llm.base import ChatModel, GenerationOptions, Message
from ..parsing import (LABEL_RE, Action, SectionRouter, Step, argument_from_json,
                       clean_answer, parse_step)
from ..tools.base import ToolResult
from ..tools.observation import format_sources
from ..tools.registry import ToolSet
from .compose import Composer
from .grounding import RepetitionGuard
from .sources import SourceBook, clean_citations
from .spec import ModeSpec

STOP = ["\nOBSERVATION", "\nObservation", "\nBEOBACHTUNG", "\nBeobachtung"]
STEP_MAX_TOKENS = 512
ANSWER_MAX_TOKENS = 768
REPEAT_LIMIT = 3
PREVIEW_CHARS = 300
_UNKNOWN = {"de": "Unbekanntes Tool {name!r}. Verfügbare Tools: {names}.",
            "en": "Unknown tool {name!r}. Available tools: {names}."}
_FAILED = {"de": "Das Tool {name} ist fehlgeschlagen: {err}",
           "en": "The tool {name} failed: {err}"}


def default_threshold() -> float:
    """The KB's documented high-confidence threshold (knowledge/confidence.py)."""
    try:
        from ..knowledge.confidence import HIGH_CONFIDENCE
        return float(HIGH_CONFIDENCE)
    except ImportError:
        return 0.8


def step_grammar(spec: ModeSpec, llm: ChatModel, tool_names: Sequence[str]) -> Optional[str]:
    """The mode's GBNF step grammar, for backends that enforce one."""
    if not getattr(llm, "supports_grammar", False):
        return None
    try:
        from ..llm.grammars import step_grammar as build
    except ImportError:
        return None
    return build(spec.name, list(tool_names))


class Episode:
    """One run of a step mode over one question; `run()` yields its events."""

    def __init__(self, spec: ModeSpec, llm: ChatModel, tools: ToolSet, *, question: str,
                 system: str, max_iterations: int, lang: str = "en",
                 history: Sequence[Message] = (), threshold: Optional[float] = None,
                 adaptive: bool = True, grammar: Optional[str] = None,
                 composer: Optional[Composer] = None):
        self.spec, self.llm, self.tools = spec, llm, tools
        self.composer = composer or Composer()
        self.question = question
        self.goal = question
        self.lang = lang
        self.max_iterations = max_iterations
        self.threshold = default_threshold() if threshold is None else threshold
        self.adaptive = adaptive
        self.has_history = bool(history)
        self.messages: list[Message] = [{"role": "system", "content": system}, *history,
                                        {"role": "user", "content": question}]
        self.native = spec.native_tools and getattr(llm, "supports_tools", False)
        self.options = GenerationOptions(
            stop=None if self.native else STOP, max_tokens=STEP_MAX_TOKENS, grammar=grammar,
            tools=tools.specs() if self.native else None)
        self.book = SourceBook()
        self.usage = Usage()
        self.last_usage: dict = {}
        self.iterations = 0
        self.adaptive_exit = False
        self.searched_question = False
        self.tool_runs = 0
        self.started = time.perf_counter()
        self._delta_status = {"reasoning": (f"{spec.reasoning}_delta" if spec.reasoning
                                            else "action_delta"), "action": "action_delta"}

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> Iterator[Event]:
        spec = self.spec
        yield {"status": "starting", "mode": spec.name, "goal": self.goal}
        last_key: Optional[tuple] = None
        repeats = 0
        fed_back = False
        reason = "max_iterations"
        for it in range(1, self.max_iterations + 1):
            self.iterations = it
            event = {"status": "iteration", "iteration": it, "max": self.max_iterations}
            if spec.goal_in_events:
                event["goal"] = self.goal
            yield event
            yield {"status": spec.start_status, "iteration": it}
            try:
                step, call_id = yield from self._step(it)
            except LLMError as err:
                if not len(self.book):
                    raise                               # nothing gathered: a clear error
                yield {"status": "error", "iteration": it, "message": str(err)}
                reason = "llm_error"
                break
            usage = self.last_usage
            if step.goal:
                self.goal = step.goal
            if step.reasoning and spec.reasoning:
                event = {"status": spec.reasoning, spec.reasoning: step.reasoning,
                         "iteration": it, "usage": usage}
                if spec.reasoning_parts and (parts := spec.reasoning_parts(step.reasoning)):
                    event["parts"] = parts
                yield event
            action = step.action
            if step.error is not None:
                if not fed_back:
                    fed_back = True
                    yield self._feed_back(step, it)
                    continue
                yield {"status": "parse_error", "iteration": it, "message": step.error.message,
                       "hint": step.error.hint, "recovered": True, "usage": usage}
                action = self._recovery_action(step)
                if action is None:
                    reason = "parse_error"
                    break
                call_id = None
            else:
                fed_back = False
            forced = None
            answer = step.final_answer if action is None else \
                action.argument if action.name == "respond" else None
            if answer is not None:
                grounding = self._grounding_action(answer)
                if grounding is None:
                    if action is not None:              # respond(answer): seed 002 shows it
                        yield {"status": "action", "action": action.name,
                               "param": action.argument, "iteration": it, "usage": usage}
                    yield from self._finish(answer, it)
                    return
                action, forced, call_id = grounding, "answer_without_sources", \
                    self._close_call(call_id)
            event = {"status": "action", "action": action.name, "param": action.argument,
                     "iteration": it, "usage": usage}
            if forced:
                event["forced"] = forced
            yield event
            key = (action.name, " ".join(action.argument.lower().split()))
            repeats = repeats + 1 if key == last_key else 1
            last_key = key
            if repeats >= REPEAT_LIMIT:
                if call_id is not None:         # a tool call must get its tool message
                    self._observe(f"{action.name} was not run again: the same call was made "
                                  f"{repeats} times in a row.", call_id)
                yield {"status": "repeated_action", "iteration": it, "action": action.name,
                       "param": action.argument, "count": repeats, "usage": usage}
                reason = "repeated_action"
                break
            result, text = self._execute(action)
            self._observe(text, call_id)
            yield {"status": "observation", "result_preview": text[:PREVIEW_CHARS],
                   "iteration": it, "confidence": result.confidence, "error": result.error,
                   "usage": usage}
            if result.ends_episode:
                yield from self._finish(result.text, it)
                return
            if (self.adaptive and not result.error and result.sources
                    and result.confidence >= self.threshold):
                self.adaptive_exit = True
                yield {"status": "adaptive_iteration", "iteration": it,
                       "reason": "high_confidence", "confidence": result.confidence,
                       "usage": usage}
                yield {"status": "adaptive_response", "reason": "high_confidence_results",
                       "usage": usage}
                reason = "high_confidence"
                break
        else:
            yield {"status": "max_iterations_reached", "iteration": self.iterations,
                   "max": self.max_iterations, "usage": self.last_usage}
        yield from self._final_call(reason)

    # -- one model call ---------------------------------------------------------------------
    def _step(self, it: int):
        """Stream one step; yields delta events, returns (Step, native tool-call id)."""
        router = SectionRouter()
        delta_status = self._delta_status
        parts: list[str] = []
        calls: dict[int, list] = {}
        usage = None
        for chunk in self.llm.stream(self.messages, self.options):
            if chunk.text:
                parts.append(chunk.text)
                for section, piece in router.feed(chunk.text):
                    status = delta_status.get(section)
                    if status:                          # the answer is shown once it is final
                        yield {"status": status, "delta": piece, "iteration": it}
            if chunk.tool_calls:
                for d in chunk.tool_calls:
                    slot = calls.setdefault(d.index, [d.id, "", ""])
                    slot[0] = slot[0] or d.id
                    slot[1] += d.name or ""
                    slot[2] += d.arguments
            if chunk.usage is not None:
                usage = chunk.usage
        self._count(usage)
        for section, piece in router.feed("", final=True):
            status = delta_status.get(section)
            if status:
                yield {"status": status, "delta": piece, "iteration": it}
        text = "".join(parts)
        if calls:
            call_id, name, arguments = calls[min(calls)]
            call_id = call_id or f"call_{it}"
            self.messages.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}]})
            return Step(text=text, action=Action(name, argument_from_json(arguments))), call_id
        if self.native and text.strip() and "ACTION" not in text.upper():
            step = Step(text=text, final_answer=text.strip())   # plain text is the answer
        else:
            step = parse_step(text, reflact=self.spec.reflact_labels)
        self.messages.append({"role": "assistant", "content": step.text})
        return step, None

    def _count(self, usage: Optional[Usage]) -> None:
        if usage is None:
            usage = Usage(calls=1)
        elif not usage.calls:
            usage = Usage(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, 1)
        self.usage = self.usage + usage
        # Usage.as_dict() goes through dataclasses.asdict (a deepcopy per field): too slow
        # for once per LLM call on the hot path; same keys, same values.
        self.last_usage = {"prompt_tokens": usage.prompt_tokens,
                           "completion_tokens": usage.completion_tokens,
                           "cached_tokens": usage.cached_tokens, "calls": usage.calls}

    # -- parse failures ---------------------------------------------------------------------
    def _feed_back(self, step: Step, it: int) -> Event:
        """Show the model why its step was unreadable, once (the hint in its language)."""
        err = step.error
        hint = prompts.hints(self.lang).get(err.code, err.hint)
        self.messages.append({"role": "user", "content": prompts.fill(
            prompts.load("parse_error", self.lang), MESSAGE=err.message, HINT=hint)})
        return {"status": "parse_error", "iteration": it, "message": err.message,
                "hint": hint, "recovered": False, "usage": self.last_usage}

    def _recovery_action(self, step: Step) -> Optional[Action]:
        """After a second unreadable step: if nothing was found yet, search the question
        (once); otherwise stop and answer from what was found."""
        tool = self.tools.search_tool()
        if tool is None or self.searched_question or len(self.book):
            return None
        self.searched_question = True
        return Action(tool.name, self.question)

    def _grounding_action(self, answer: str) -> Optional[Action]:
        """A search of the question when the model answers before any search was made.

        A clarifying question back to the user (ends with "?") and a follow-up answered from
        the conversation history are legitimate without a search; anything else would be an
        answer from nothing, which small models otherwise give to document questions."""
        if (not self.spec.search_first or self.tool_runs or self.has_history
                or answer.rstrip().endswith("?")):
            return None
        tool = self.tools.search_tool()
        return Action(tool.name, self.question) if tool is not None else None

    def _close_call(self, call_id: Optional[str]) -> None:
        """A native respond call replaced by a search still needs its tool message."""
        if call_id is not None:
            self._observe("Search the documents before answering.", call_id)
        return None

    # -- tools ------------------------------------------------------------------------------
    def _execute(self, action: Action) -> tuple[ToolResult, str]:
        """Run a tool; whatever goes wrong becomes an observation the model can read."""
        tool = self.tools.get(action.name)
        if tool is None:
            msg = _UNKNOWN.get(self.lang, _UNKNOWN["en"]).format(
                name=action.name, names=", ".join(self.tools.names))
            return ToolResult(msg, error=True), msg
        self.tool_runs += 1
        if action.argument == self.question:
            self.searched_question = True
        try:
            result = tool(action.argument)
        except Exception as err:  # noqa: BLE001 - a failing tool must not end the run
            msg = _FAILED.get(self.lang, _FAILED["en"]).format(
                name=action.name, err=str(err) or type(err).__name__)
            return ToolResult(msg, error=True), msg
        if result.sources:
            numbers = self.book.add(result.sources)
            return result, format_sources(result.sources, numbers, self.lang)
        return result, result.text

    def _observe(self, text: str, call_id: Optional[str]) -> None:
        if call_id is not None:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        else:
            self.messages.append({"role": "user", "content": "OBSERVATION: " + text})

    # -- the answer -------------------------------------------------------------------------
    def _finish(self, answer: str, it: int) -> Iterator[Event]:
        yield {"status": "final_answer", "iteration": it, "usage": self.last_usage}
        yield from self._composed(clean_answer(answer))

    def _composed(self, answer: str) -> Iterator[Event]:
        """The answer the user reads (modes/compose.py): grounded, cited, never empty."""
        answer = clean_citations(answer, len(self.book)).strip()
        composition = self.composer.compose(
            answer, self.question, self.book.sources, lang=self.lang,
            prompt_texts=(self.messages[0]["content"], prompts.load("final_answer", self.lang)),
            not_found=prompts.fill(prompts.load("not_found", self.lang), QUESTION=self.question))
        yield {"delta": composition.text}
        done = self._done(composition.text)
        done["model_answer"] = answer
        done["composition"] = composition.as_dict()
        yield done

    def _final_call(self, reason: str) -> Iterator[Event]:
        """Answer from what was gathered (adaptive exit, limit, repeats): never empty."""
        yield {"status": "final_answer", "iteration": self.iterations, "reason": reason,
               "usage": self.last_usage}
        self.messages.append({"role": "user", "content": prompts.fill(
            prompts.load("final_answer", self.lang), QUESTION=self.question)})
        options = GenerationOptions(stop=STOP, max_tokens=ANSWER_MAX_TOKENS)
        # The reply is composed before it is shown (a small model's text may not survive),
        # so it is read whole rather than streamed as deltas.
        parts: list[str] = []
        usage = None
        guard, text = RepetitionGuard(), ""
        try:
            stream = self.llm.stream(self.messages, options)
            for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                if not chunk.text:
                    continue
                parts.append(chunk.text)
                text += chunk.text
                if guard.feed(text):                    # looping: stop generating
                    getattr(stream, "close", lambda: None)()
                    break
            self._count(usage)
        except LLMError as err:
            yield {"status": "error", "message": str(err), "usage": self.last_usage}
            parts = []
        step = parse_step("".join(parts))
        answer = step.final_answer if step.final_answer is not None else _unlabelled(parts)
        yield from self._composed(answer)

    def _done(self, answer: str) -> Event:
        return {"done": True, "full_response": answer, "sources": self.book.as_dicts(answer),
                "goal": self.goal, "mode": self.spec.name, "iterations": self.iterations,
                "adaptive_exit": self.adaptive_exit, "usage": self.usage.as_dict(),
                "elapsed_s": round(time.perf_counter() - self.started, 6)}


def _unlabelled(parts: list[str]) -> str:
    """A final reply without FINAL ANSWER label: its text up to any step label."""
    text = "".join(parts)
    m = LABEL_RE.search(text)
    return text[:m.start()] if m else text
