"""OpenTelemetry spans of agent runs (GenAI semantic conventions), recorded by the SDK's
in-memory exporter from a real Agent over a real KB on the scripted model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from agentmodes import Agent, ChatbotSettings, telemetry  # noqa: E402
from agentmodes.llm.scripted import ScriptedModel  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use(provider)
    yield exporter
    telemetry.use(None)
    provider.shutdown()


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    from agentmodes.knowledge.base import KnowledgeBase

    base = KnowledgeBase.open(tmp_path_factory.mktemp("otel") / "kb.db")
    base.ingest(EXAMPLES, embed=False)
    yield base
    base.close()


def by_name(exporter) -> dict:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_run_iteration_llm_and_tool_spans_with_genai_attributes(spans, kb):
    model = ScriptedModel(['THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")',
                           'THOUGHT: and a missing tool\nACTION: nope("x")',
                           "THOUGHT: found\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"])
    settings = ChatbotSettings(agent_mode="react", adaptive_iteration=False)
    result = Agent(llm=model, knowledge=kb, settings=settings).run("Wann geöffnet?")
    finished = spans.get_finished_spans()
    names = [s.name for s in finished]
    run = next(s for s in finished if s.name == "invoke_agent react")
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "react"
    assert run.attributes["gen_ai.request.model"] == model.name
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens
    assert run.attributes["agentmodes.iterations"] == 3

    iterations = [s for s in finished if s.name.startswith("iteration ")]
    assert [s.name for s in sorted(iterations, key=lambda s: s.start_time)] == [
        "iteration 1", "iteration 2", "iteration 3"]
    assert all(s.parent.span_id == run.context.span_id for s in iterations)

    chats = [s for s in finished if s.name == f"chat {model.name}"]
    assert len(chats) == result.usage.calls == 3
    assert all(s.attributes["gen_ai.operation.name"] == "chat" for s in chats)
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats) == \
        result.usage.prompt_tokens
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats) == \
        result.usage.completion_tokens
    parents = {s.span_id for s in (s.context for s in iterations)}
    assert all(s.parent.span_id in parents for s in chats)

    search = next(s for s in finished if s.name == "execute_tool lexical_search")
    assert search.attributes["gen_ai.tool.name"] == "lexical_search"
    assert search.attributes["gen_ai.operation.name"] == "execute_tool"
    assert search.status.status_code != StatusCode.ERROR
    missing = next(s for s in finished if s.name == "execute_tool nope")
    assert missing.status.status_code == StatusCode.ERROR
    assert "execute_tool lexical_search" in names


def test_the_answer_call_after_the_limit_is_a_span_with_its_share_of_tokens(spans, kb):
    model = ScriptedModel(['THOUGHT: search\nACTION: lexical_search("Telefon")',
                           "Die Nummer ist +49 911 97554990 [1]"])
    settings = ChatbotSettings(agent_mode="react", agent_max_iterations=1,
                               adaptive_iteration=False)
    result = Agent(llm=model, knowledge=kb, settings=settings).run("Telefon?")
    chats = sorted((s for s in spans.get_finished_spans() if s.name.startswith("chat ")),
                   key=lambda s: s.start_time)
    assert len(chats) == 2 and chats[1].attributes["agentmodes.reason"] == "max_iterations"
    assert chats[1].parent.span_id == next(
        s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")).context.span_id
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats) == \
        result.usage.completion_tokens


def test_no_op_without_configuration():
    telemetry.use(None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    probe = ("import sys; from agentmodes import telemetry; "
             "events = iter([{'status': 'starting'}]); "
             "assert telemetry.traced(events) is events; "
             "assert 'opentelemetry.sdk' not in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_otlp_exporter_when_the_endpoint_is_set():
    probe = ("from agentmodes import telemetry; from opentelemetry import trace; "
             "t = telemetry._tracer(); p = trace.get_tracer_provider(); "
             "names = [type(x.span_exporter).__name__ for x in "
             "p._active_span_processor._span_processors]; print(t is not None, names)")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True ['OTLPSpanExporter']"
