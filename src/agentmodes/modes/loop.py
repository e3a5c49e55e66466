"""The one loop the step modes (ACT, ReAct, ReflAct) share.

A mode is a ModeSpec: its prompt, its labels, its stop rule. Everything else lives here once:
iterations up to the budget, streaming deltas by section, parsing, tool execution (errors and
unknown tools become observations), parse-error feedback and recovery, repeat detection,
the adaptive exit on a confident search, the best-effort answer at the limit, run-wide
source numbering with citation cleanup, and token usage on every event after an LLM call.
What the episode acts on is injected (a Toolbox, see acting.py): the knowledge base's tools
or an environment.

Event order follows seed 000: `iteration` (with the steps so far), the start status, the
reasoning deltas, `reflection`/`thought` the moment the ACTION label begins (it carries no
usage yet: the call is still running), `action_delta`s, `action`, `observation_delta`s
while the tool works, `observation`.

The loop is on the hot path of every benchmark: plain dicts for events, regexes compiled
once, no copies of the growing message list (it is append-only, which also lets a backend
reuse its KV cache for the shared prefix).
"""

from __future__ import annotations

import logging
import time
from typing import Iterator, Optional, Sequence

from .. import prompts
from ..errors import LLMError
from ..events import Event, Usage
from ..llm.base import ChatModel, GenerationOptions, Message
from ..parsing import LABEL_RE, Action, SectionRouter, Step, argument_from_json, parse_step
from .acting import Observation, Toolbox, perform
from .answering import ANSWER_STOP, AnswerWriter
from .compose import Composer
from .sources import SourceBook
from .spec import ModeSpec

STOP = ANSWER_STOP
STEP_MAX_TOKENS = 512
REPEAT_LIMIT = 3
FORCED_REASON = ("require_search: the model answered before searching the documents, so the "
                 "question is searched first (set require_search=false for the seeds' "
                 "behaviour: the first answer ends the run)")
log = logging.getLogger(__name__)


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
    return build(spec.step_format or spec.name, list(tool_names))


class Episode(AnswerWriter):
    """One run of a step mode over one question; `run()` yields its events.

    require_search: an answer before any search is replaced by a search of the question
    (see _grounding_action); False is the seeds' rule: the first parsed answer ends the run.
    repeat_limit: the same action this many times in a row stops the run (None: never, for
    environments where the rule heuristic of seed 004 judges repeats instead).
    """

    def __init__(self, spec: ModeSpec, llm: ChatModel, tools: Toolbox, *, question: str,
                 system: str, max_iterations: int, lang: str = "en",
                 history: Sequence[Message] = (), threshold: Optional[float] = None,
                 adaptive: bool = True, grammar: Optional[str] = None,
                 require_search: bool = True, repeat_limit: Optional[int] = REPEAT_LIMIT,
                 composer: Optional[Composer] = None):
        self.spec, self.llm, self.tools = spec, llm, tools
        self.composer = composer or Composer()     # the answer the user reads (compose.py)
        self.question = question
        self.goal = question
        self.lang = lang
        self.max_iterations = max_iterations
        self.threshold = default_threshold() if threshold is None else threshold
        self.adaptive = adaptive
        self.require_search = require_search
        self.repeat_limit = repeat_limit
        self.has_history = bool(history)
        self.messages: list[Message] = [{"role": "system", "content": system}, *history,
                                        {"role": "user", "content": question}]
        self.native = spec.native_tools and getattr(llm, "supports_tools", False)
        self.options = GenerationOptions(
            stop=None if self.native else STOP, max_tokens=STEP_MAX_TOKENS, grammar=grammar,
            tools=tools.specs() if self.native else None)
        self.tool_names = tuple(tools.names)
        self.book = SourceBook()
        self.usage = Usage()
        self.last_usage: dict = {}
        self.iterations = 0
        self.adaptive_exit = False
        self.searched_question = False
        self.tool_runs = 0
        self.steps: list[dict] = []        # the finished steps, as the iteration event shows
        self.plan: Optional[list[str]] = None    # Plan-and-Solve: the steps, and which is next
        self.plan_pos = 0
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
        announced = -1
        if spec.plans:
            from .plan_and_solve import make_plan
            yield from make_plan(self, self.options.grammar is not None)
        for it in range(1, self.max_iterations + 1):
            if self.plan is not None and self.plan_pos >= len(self.plan):
                reason = "plan_complete"
                break
            self.iterations = it
            event = {"status": "iteration", "iteration": it, "max": self.max_iterations,
                     "steps": list(self.steps)}
            if spec.goal_in_events:
                event["goal"] = self.goal
            if self.plan is not None:
                event["plan_step"] = self.plan_pos + 1
                event["plan_text"] = self.plan[self.plan_pos]
                if announced != self.plan_pos:
                    from .plan_and_solve import announce_step
                    announce_step(self)
                    announced = self.plan_pos
            yield event
            yield {"status": spec.start_status, "iteration": it}
            try:
                step, call_id = yield from self._step(it)
            except LLMError as err:
                log.warning("%s: LLM call failed in iteration %d: %s", spec.name, it, err)
                if not self._gathered():
                    raise                               # nothing gathered: a clear error
                yield {"status": "error", "iteration": it, "message": str(err)}
                reason = "llm_error"
                break
            usage = self.last_usage
            if step.goal:
                self.goal = step.goal
            record: dict = {"iteration": it}
            if step.reasoning and spec.reasoning:
                record[spec.reasoning] = step.reasoning
            action = step.action
            if step.error is not None:
                log.debug("%s: unreadable step in iteration %d: %s", spec.name, it,
                          step.error.message)
                self.steps.append({**record, "parse_error": step.error.message})
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
                log.info("%s: answer before any search in iteration %d; searching the "
                         "question first (require_search)", spec.name, it)
                action, forced, call_id = grounding, "answer_without_sources", \
                    self._close_call(call_id)
            event = {"status": "action", "action": action.name, "param": action.argument,
                     "iteration": it, "usage": usage}
            if forced:
                event["forced"], event["reason"] = forced, FORCED_REASON
            yield event
            key = (action.name, " ".join(action.argument.lower().split()))
            repeats = repeats + 1 if key == last_key else 1
            last_key = key
            if self.repeat_limit is not None and repeats >= self.repeat_limit:
                if call_id is not None:         # a tool call must get its tool message
                    self._observe(f"{action.name} was not run again: the same call was made "
                                  f"{repeats} times in a row.", call_id)
                log.info("%s: %s(%r) %d times in a row; stopping", spec.name, action.name,
                         action.argument, repeats)
                yield {"status": "repeated_action", "iteration": it, "action": action.name,
                       "param": action.argument, "count": repeats, "usage": usage}
                reason = "repeated_action"
                break
            observation = yield from self._execute(action, it)
            result, text = observation.result, observation.text
            self._observe(text, call_id)
            preview = text[:spec.preview_chars]
            event = {"status": "observation", "result_preview": preview, "iteration": it,
                     "confidence": result.confidence, "error": result.error,
                     "effect": observation.effect, "usage": usage}
            if observation.location is not None:
                event["location"] = observation.location
            yield event
            self.steps.append({**record, "action": action.name, "param": action.argument,
                               **({"forced": forced} if forced else {}),
                               "observation": preview})
            if self.plan is not None and not forced:
                self.plan_pos += 1              # this step of the plan is carried out
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
        """Stream one step; yields delta and reasoning events, returns (Step, native call id).

        The reasoning event goes out when the ACTION (or FINAL ANSWER) label begins, before
        any action delta; a step without such a label gets it once the call has ended."""
        router = SectionRouter()
        state = {"reasoned": False}
        parts: list[str] = []
        calls: dict[int, list] = {}
        usage = None
        for chunk in self.llm.stream(self.messages, self.options):
            if chunk.text:
                parts.append(chunk.text)
                yield from self._route(router, chunk.text, it, state)
            if chunk.tool_calls:
                for d in chunk.tool_calls:
                    slot = calls.setdefault(d.index, [d.id, "", ""])
                    slot[0] = slot[0] or d.id
                    slot[1] += d.name or ""
                    slot[2] += d.arguments
            if chunk.usage is not None:
                usage = chunk.usage
        self._count(usage)
        yield from self._route(router, "", it, state, final=True)
        text = "".join(parts)
        step = None
        if not calls or "ANSWER" in text.upper():     # a final answer wins over a tool call
            step = self._parse(text)
        if calls and (step is None or step.final_answer is None):
            call_id, name, arguments = calls[min(calls)]
            call_id = call_id or f"call_{it}"
            self.messages.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}]})
            return Step(text=text, action=Action(name, argument_from_json(arguments))), call_id
        if self.native and text.strip() and "ACTION" not in text.upper() and \
                step.final_answer is None:
            step = Step(text=text, final_answer=text.strip())   # plain text is the answer
        if not state["reasoned"]:
            yield from self._reasoning_event(step, it, self.last_usage)
        self.messages.append({"role": "assistant", "content": step.text})
        return step, None

    def _parse(self, text: str) -> Step:
        """One reply as a Step (an environment episode reads ACTIONs as its commands)."""
        return parse_step(text, reflact=self.spec.reflact_labels, tools=self.tool_names)

    def _gathered(self) -> bool:
        """Whether an LLM failure can end the run with what it has (else it is raised)."""
        return bool(len(self.book))

    def _route(self, router: SectionRouter, chunk: str, it: int, state: dict,
               final: bool = False) -> Iterator[Event]:
        """Delta events for one streamed chunk; the reasoning event at the first ACTION or
        FINAL ANSWER label, parsed from the text before that label."""
        delta_status = self._delta_status
        first = len(router.label_starts)
        for section, piece in router.feed(chunk, final=final):
            if section == "label":
                start = router.label_starts[first]
                first += 1
                if not state["reasoned"] and piece in ("action", "answer"):
                    state["reasoned"] = True
                    before = router.buf[:start]
                    yield from self._reasoning_event(
                        parse_step(before, reflact=self.spec.reflact_labels), it, None,
                        unlabelled=before)
                continue
            status = delta_status.get(section)
            if status:                                  # the answer is shown once it is final
                yield {"status": status, "delta": piece, "iteration": it}

    def _reasoning_event(self, step: Step, it: int, usage: Optional[dict], *,
                         unlabelled: str = "") -> Iterator[Event]:
        """The reflection/thought event of a step (nothing for ACT or an empty reasoning)."""
        name = self.spec.reasoning
        text = step.reasoning or ("" if LABEL_RE.search(unlabelled) else unlabelled.strip())
        if not name or not text:
            return
        event = {"status": name, name: text, "iteration": it}
        if usage is not None:
            event["usage"] = usage
        if self.spec.reasoning_parts and (parts := self.spec.reasoning_parts(text)):
            event["parts"] = parts
        yield event

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
        if (not self.require_search or not self.spec.search_first or self.tool_runs
                or self.has_history or answer.rstrip().endswith("?")):
            return None
        tool = self.tools.search_tool()
        return Action(tool.name, self.question) if tool is not None else None

    def _close_call(self, call_id: Optional[str]) -> None:
        """A native respond call replaced by a search still needs its tool message."""
        if call_id is not None:
            self._observe("Search the documents before answering.", call_id)
        return None

    # -- tools ------------------------------------------------------------------------------
    def _execute(self, action: Action, it: int):
        """Run a tool (acting.perform): observation_delta events while it works, then the
        Observation; whatever goes wrong is an observation the model can read."""
        if self.tools.get(action.name) is not None:
            self.tool_runs += 1
            if action.argument == self.question:
                self.searched_question = True
        run = perform(self.tools, action, self.book, self.lang)
        while True:
            try:
                piece = next(run)
            except StopIteration as stop:
                observation: Observation = stop.value
                break
            yield {"status": "observation_delta", "delta": piece, "iteration": it}
        if observation.result.error:
            log.info("%s: %s(%r) failed: %s", self.spec.name, action.name, action.argument,
                     observation.text[:200])
        return observation

    def _observe(self, text: str, call_id: Optional[str]) -> None:
        if call_id is not None:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        else:
            self.messages.append({"role": "user", "content": "OBSERVATION: " + text})
