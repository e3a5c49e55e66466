"""OpenTelemetry traces of agent runs, with the GenAI semantic conventions.

A consumer of the event stream like the CLI, the server and the persistence: `traced()`
passes a run's events through unchanged and turns what they say into spans:

    invoke_agent {mode}            starting ... done      gen_ai.usage.* = the run's totals
      iteration {n}                iteration ... next iteration / final answer / done
        chat {model}               the mode's start status (getting_action, reflecting,
                                   planning) ... the first event carrying that call's usage
        execute_tool {tool}        action ... observation  gen_ai.tool.name, error.type
      chat {model}                 final_answer (reason: the answer call) ... done

Nothing here re-derives an event: times are when the events arrive, tokens are the
`usage` the loop attaches to the first event after each LLM call (seed contract), the
answer call's share is the done event's total minus the step calls'.

Configuration: no-op (the events pass through untouched, no SDK loaded) unless
OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (then an OTLP/HTTP
exporter with the standard OTEL_* variables, service.name from OTEL_SERVICE_NAME, default
"agentmodes"), or an application has installed its own global TracerProvider, or
`use(provider)` was called (tests, embedding applications).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterator, Optional

Event = dict[str, Any]
LLM_CALL_STARTS = frozenset({"getting_action", "reflecting", "planning"})
SYSTEM = "agentmodes"

_lock = threading.Lock()
_provider: Any = None
_configured = False


def use(provider: Any) -> None:
    """Send spans to this TracerProvider (None: back to the environment's choice)."""
    global _provider, _configured
    with _lock:
        _provider, _configured = provider, provider is not None


def _tracer() -> Any:
    """The tracer to use, or None for no-op."""
    global _provider, _configured
    with _lock:
        if not _configured:
            _configured = True
            _provider = _from_environment()
        provider = _provider
    return provider.get_tracer("agentmodes") if provider is not None else None


def _from_environment() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):   # the application set one up
        return current
    if not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "agentmodes")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)          # also shuts down (flushes) at exit
    return provider


def traced(events: Iterator[Event], *, model: str = "", mode: str = "",
           question: str = "") -> Iterator[Event]:
    """The same events, with spans recorded as they pass (or the iterator itself)."""
    tracer = _tracer()
    if tracer is None:
        return events
    return _SpanRecorder(tracer, model, mode, question).consume(events)


class _SpanRecorder:
    def __init__(self, tracer: Any, model: str, mode: str, question: str) -> None:
        self.tracer, self.model, self.mode, self.question = tracer, model or "unknown", mode, \
            question
        self.run = self.iteration = self.llm = self.tool = None
        self.step_tokens = [0, 0]           # input, output of the step calls so far

    def consume(self, events: Iterator[Event]) -> Iterator[Event]:
        from opentelemetry.trace import Status, StatusCode

        try:
            for event in events:
                self.see(event)
                yield event
        except BaseException as err:
            for span in (self.tool, self.llm, self.iteration, self.run):
                if span is not None:
                    span.set_status(Status(StatusCode.ERROR, str(err)[:200]))
                    span.set_attribute("error.type", type(err).__name__)
            raise
        finally:
            self._end("tool", "llm", "iteration", "run")

    # -- spans ------------------------------------------------------------------------------
    def _start(self, name: str, parent: Any, **attributes: Any) -> Any:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(name, context=context)
        for key, value in attributes.items():
            if value is not None and value != "":
                span.set_attribute(key, value)
        return span

    def _end(self, *names: str) -> None:
        for name in names:
            span = getattr(self, name)
            if span is not None:
                span.end()
                setattr(self, name, None)

    def _parent(self) -> Any:
        return self.iteration or self.run

    def _llm(self) -> Any:
        return self._start(f"chat {self.model}", self._parent(), **{
            "gen_ai.operation.name": "chat", "gen_ai.system": SYSTEM,
            "gen_ai.provider.name": SYSTEM, "gen_ai.request.model": self.model})

    # -- events -----------------------------------------------------------------------------
    def see(self, event: Event) -> None:
        status = event.get("status")
        if status == "starting" and self.run is None:
            self.mode = event.get("mode") or self.mode
            self.run = self._start(f"invoke_agent {self.mode}", None, **{
                "gen_ai.operation.name": "invoke_agent", "gen_ai.system": SYSTEM,
                "gen_ai.provider.name": SYSTEM, "gen_ai.agent.name": self.mode,
                "gen_ai.request.model": self.model, "agentmodes.goal": event.get("goal")})
            return
        if self.run is None:
            return
        if "usage" in event and self.llm is not None and not event.get("done"):
            self._close_llm(event["usage"])
        if status == "iteration":
            self._end("tool", "llm", "iteration")
            self.iteration = self._start(f"iteration {event.get('iteration')}", self.run, **{
                "agentmodes.iteration": event.get("iteration"),
                "agentmodes.max_iterations": event.get("max")})
        elif status in LLM_CALL_STARTS:
            self._end("llm")
            self.llm = self._llm()
        elif status == "action":
            self._end("tool")
            self.tool = self._start(f"execute_tool {event.get('action')}", self._parent(), **{
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.get("action"),
                "gen_ai.tool.type": "function"})
        elif status == "observation" and self.tool is not None:
            if event.get("error"):
                from opentelemetry.trace import Status, StatusCode
                self.tool.set_status(Status(StatusCode.ERROR, "tool error"))
                self.tool.set_attribute("error.type", "tool_error")
            if event.get("confidence") is not None:
                self.tool.set_attribute("agentmodes.confidence", float(event["confidence"]))
            self._end("tool")
        elif status == "final_answer":
            self._end("tool", "llm", "iteration")
            if event.get("reason"):                  # the answer is written by one more call
                self.llm = self._llm()
                self.llm.set_attribute("agentmodes.reason", event["reason"])
        elif status == "error":
            from opentelemetry.trace import Status, StatusCode
            span = self.llm or self.tool or self.iteration or self.run
            span.set_status(Status(StatusCode.ERROR, str(event.get("message", ""))[:200]))
            span.set_attribute("error.type", "agent_error")
        elif event.get("done"):
            self._done(event)

    def _close_llm(self, usage: Optional[dict]) -> None:
        if usage:
            tokens_in, tokens_out = int(usage.get("prompt_tokens", 0)), \
                int(usage.get("completion_tokens", 0))
            self.llm.set_attribute("gen_ai.usage.input_tokens", tokens_in)
            self.llm.set_attribute("gen_ai.usage.output_tokens", tokens_out)
            if usage.get("cached_tokens"):
                self.llm.set_attribute("gen_ai.usage.cache_read.input_tokens",
                                       int(usage["cached_tokens"]))
            self.step_tokens[0] += tokens_in
            self.step_tokens[1] += tokens_out
        self._end("llm")

    def _done(self, event: Event) -> None:
        usage = event.get("usage") or {}
        total_in, total_out = int(usage.get("prompt_tokens", 0)), \
            int(usage.get("completion_tokens", 0))
        if self.llm is not None:                    # the answer call: its share of the total
            self.llm.set_attribute("gen_ai.usage.input_tokens",
                                   max(0, total_in - self.step_tokens[0]))
            self.llm.set_attribute("gen_ai.usage.output_tokens",
                                   max(0, total_out - self.step_tokens[1]))
        self._end("tool", "llm", "iteration")
        run = self.run
        run.set_attribute("gen_ai.usage.input_tokens", total_in)
        run.set_attribute("gen_ai.usage.output_tokens", total_out)
        for key, name in (("iterations", "agentmodes.iterations"),
                          ("adaptive_exit", "agentmodes.adaptive_exit")):
            if event.get(key) is not None:
                run.set_attribute(name, event[key])
        run.set_attribute("agentmodes.sources", len(event.get("sources") or []))
        self._end("run")
