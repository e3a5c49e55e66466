"""Framework overhead per agent iteration, side by side with LangGraph, smolagents, pydantic-ai.

Every framework runs the same episode: a fake model asks for a trivial tool `iterations`
times, then answers. The model returns prebuilt replies and the tool returns a constant, so
what is timed is the framework: message bookkeeping, parsing, events, tool dispatch. Per
iteration = run time / iterations (agent objects are built once, outside the timing; our
Agent builds its prompt and tool set inside every run, so that cost is included for us).

Wall time moves with the machine's load; Python function calls per iteration (counted with
sys.setprofile over one run) do not, so both are reported.
"""

from __future__ import annotations

import gc
import importlib.metadata
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from ..events import Usage
from ..llm.base import ChatChunk, ToolCallDelta
from ..tools.base import ToolResult

Runner = Callable[[], object]


@dataclass
class Measurement:
    framework: str
    version: str
    median_us: float = 0.0
    p95_us: float = 0.0
    calls_per_iteration: float = 0.0
    runs: int = 0
    error: Optional[str] = None
    times_us: list[float] = field(default_factory=list, repr=False)


# --- ours ------------------------------------------------------------------------------------
class _EchoTool:
    name, parameter = "echo", "query"
    description = description_de = "Echo the query"
    _RESULT = ToolResult("ok")

    def __call__(self, argument: str) -> ToolResult:
        return self._RESULT


class _PrebuiltModel:
    """A ChatModel that replays prebuilt chunks; reply i is chosen by the conversation length."""

    name = "prebuilt"
    supports_grammar = False

    def __init__(self, iterations: int, native: bool):
        self.supports_tools = native
        usage = ChatChunk(usage=Usage(10, 5, 0, 1), finish_reason="stop")
        if native:
            steps = [[ChatChunk(tool_calls=[ToolCallDelta(0, f"c{i}", "echo",
                                                          f'{{"query": "q{i}"}}')]), usage]
                     for i in range(iterations)]
            final = [ChatChunk(tool_calls=[ToolCallDelta(0, "cf", "respond",
                                                         '{"answer": "done"}')]), usage]
        else:
            steps = [[ChatChunk(text=f'THOUGHT: look up q{i}\nACTION: echo("q{i}")'), usage]
                     for i in range(iterations)]
            final = [ChatChunk(text="THOUGHT: done\nFINAL ANSWER: done"), usage]
        self.replies = steps + [final]

    def stream(self, messages, options=None):
        return iter(self.replies[(len(messages) - 2) // 2])

    def close(self) -> None:
        pass


def ours(iterations: int, mode: str = "react") -> Runner:
    from ..agent import Agent
    from ..settings import ChatbotSettings

    native = mode == "act"
    settings = ChatbotSettings(agent_mode=mode, agent_max_iterations=iterations + 1,
                               tools_enabled=["echo", "respond"] if native else ["echo"],
                               adaptive_iteration=False, language="en")
    agent = Agent(llm=_PrebuiltModel(iterations, native), settings=settings,
                  tools=[_EchoTool()])

    def run() -> object:
        result = agent.run("What is q?")
        assert result.iterations == iterations + 1 and result.answer == "done", result.answer
        return result
    return run


def bare_loop(iterations: int) -> Runner:
    """The floor: a plain Python loop doing the same work with nothing around it."""
    replies = [("echo", f"q{i}") for i in range(iterations)] + [("final", "done")]
    tool = _EchoTool()

    def run() -> object:
        messages = [{"role": "user", "content": "What is q?"}]
        for name, argument in replies:
            if name == "final":
                return argument
            result = tool(argument)
            messages.append({"role": "assistant", "content": argument})
            messages.append({"role": "tool", "content": result.text})
    return run


# --- peers -----------------------------------------------------------------------------------
def langgraph(iterations: int) -> Runner:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    class FakeToolModel(BaseChatModel):
        k: int = iterations

        @property
        def _llm_type(self) -> str:
            return "fake-tool-model"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            n = sum(isinstance(m, ToolMessage) for m in messages)
            msg = (AIMessage(content="", tool_calls=[{"name": "echo", "args": {"query": f"q{n}"},
                                                      "id": f"c{n}"}])
                   if n < self.k else AIMessage(content="done"))
            return ChatResult(generations=[ChatGeneration(message=msg)])

        def bind_tools(self, tools, **kwargs):
            return self

    @tool
    def echo(query: str) -> str:
        """Echo the query."""
        return "ok"

    agent = create_react_agent(FakeToolModel(), [echo])
    config = {"recursion_limit": 2 * iterations + 10}

    def run() -> object:
        out = agent.invoke({"messages": [("user", "What is q?")]}, config)
        assert out["messages"][-1].content == "done"
        return out
    return run


def smolagents(iterations: int) -> Runner:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (ChatMessage, ChatMessageToolCall,
                                   ChatMessageToolCallFunction, MessageRole, Model)
    from smolagents.monitoring import LogLevel

    class FakeModel(Model):
        def __init__(self) -> None:
            super().__init__(model_id="fake")
            self.n = 0

        def generate(self, messages, stop_sequences=None, response_format=None,
                     tools_to_call_from=None, **kwargs):
            n, self.n = self.n, self.n + 1
            name, args = ("echo", {"query": f"q{n}"}) if n < iterations else \
                ("final_answer", {"answer": "done"})
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[
                ChatMessageToolCall(id=f"c{n}", type="function",
                                    function=ChatMessageToolCallFunction(name=name,
                                                                         arguments=args))])

    @tool
    def echo(query: str) -> str:
        """Echo the query.

        Args:
            query: the text to echo
        """
        return "ok"

    model = FakeModel()
    agent = ToolCallingAgent(tools=[echo], model=model, max_steps=iterations + 5,
                             verbosity_level=LogLevel.OFF)

    def run() -> object:
        model.n = 0
        out = agent.run("What is q?")
        assert out == "done", out
        return out
    return run


def pydantic_ai(iterations: int) -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    state = {"n": 0}

    # async model function and tool: pydantic-ai runs sync ones in a worker thread, and the
    # thread hand-off would dominate; this is the peer's fast path.
    async def respond(messages, info):
        n = state["n"]
        state["n"] = n + 1
        if n < iterations:
            return ModelResponse(parts=[ToolCallPart("echo", {"query": f"q{n}"}, f"c{n}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    async def echo(query: str) -> str:
        """Echo the query."""
        return "ok"

    def run() -> object:
        state["n"] = 0
        out = agent.run_sync("What is q?")
        assert out.output == "done", out.output
        return out
    return run


FRAMEWORKS: dict[str, tuple[str, Callable[[int], Runner]]] = {
    "python loop (floor)": ("", bare_loop),
    "agentmodes ReAct (text protocol)": ("agentmodes", lambda k: ours(k, "react")),
    "agentmodes ACT (native tool calls)": ("agentmodes", lambda k: ours(k, "act")),
    "LangGraph create_react_agent": ("langgraph", langgraph),
    "smolagents ToolCallingAgent": ("smolagents", smolagents),
    "pydantic-ai Agent": ("pydantic-ai-slim", pydantic_ai),
}
PEERS = ("LangGraph create_react_agent", "smolagents ToolCallingAgent", "pydantic-ai Agent")
OURS = "agentmodes ReAct (text protocol)"


def _version(dist: str) -> str:
    if not dist:
        return sys.version.split()[0]
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def count_calls(run: Runner) -> int:
    """Python and C function calls made by one run (deterministic, unlike wall time)."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call" or event == "c_call":
            calls += 1
    # As in measure(): a collection inside the window would count the __del__ calls of
    # whatever garbage earlier code left (in the full test suite two identical runs once
    # counted 1,386 and 1,382), which is not the framework's cost.
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls


def measure(name: str, iterations: int, runs: int, warmup: int = 3) -> Measurement:
    dist, factory = FRAMEWORKS[name]
    m = Measurement(name, _version(dist))
    try:
        run = factory(iterations)
        for _ in range(warmup):
            run()
        m.calls_per_iteration = count_calls(run) / iterations
        gc.collect()
        gc.disable()         # a collection landing in one run is noise, not framework cost
        try:
            for _ in range(runs):
                start = time.perf_counter()
                run()
                m.times_us.append((time.perf_counter() - start) * 1e6 / iterations)
        finally:
            gc.enable()
    except Exception as err:  # noqa: BLE001 - one broken peer must not lose the others
        m.error = f"{type(err).__name__}: {err}"[:300]
        return m
    m.runs = runs
    m.median_us = statistics.median(m.times_us)
    m.p95_us = sorted(m.times_us)[max(0, int(round(0.95 * runs)) - 1)]
    return m


def run_all(iterations: int = 20, runs: int = 50,
            progress: Optional[Callable[[str], None]] = None) -> dict:
    results = []
    for name in FRAMEWORKS:
        if progress:
            progress(name)
        # peers are ~100x slower per run: fewer runs keep the benchmark under a minute
        n = runs if FRAMEWORKS[name][0] in ("", "agentmodes") else max(10, runs // 3)
        results.append(measure(name, iterations, n))
    ours_m = next(r for r in results if r.framework == OURS)
    peers = [r for r in results if r.framework in PEERS and not r.error]
    fastest = min(peers, key=lambda r: r.median_us) if peers else None
    return {
        "benchmark": "framework overhead per agent iteration (fake model, trivial tool)",
        "iterations_per_run": iterations,
        "python": sys.version.split()[0],
        # p95 is sensitive to other processes on the machine; the load says how busy it was
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "results": [{k: v for k, v in asdict(r).items() if k != "times_us"}
                    | {"ratio_to_ours": _ratio(r.median_us, ours_m.median_us)}
                    for r in results],
        "ours_median_us": ours_m.median_us,
        "fastest_peer": fastest.framework if fastest else None,
        "fastest_peer_ratio": round(fastest.median_us / ours_m.median_us, 1) if fastest else None,
        "target": "ours < 25 us/iteration and >= 20x below the fastest peer",
        "target_met": bool(fastest and ours_m.median_us < 25
                           and fastest.median_us / ours_m.median_us >= 20),
    }


def _ratio(value: float, base: float) -> Optional[float]:
    if not value or not base:
        return None
    ratio = value / base
    return round(ratio, 1) if ratio >= 1 else round(ratio, 3)


def markdown(report: dict) -> str:
    lines = ["# Framework overhead per iteration\n",
             f"{report['benchmark']}; {report['iterations_per_run']} tool iterations per run, "
             f"Python {report['python']}, {report['cpus']} CPUs, load average "
             f"{report['load_average_1m']} during the run. Ratio = framework median / "
             "agentmodes ReAct median. p95 includes the runs in which another process took "
             "the CPU (a run of ours lasts well under a millisecond, so one preemption "
             "shows); calls/iter does not depend on load.\n",
             "| framework | version | median µs/iter | p95 µs/iter | calls/iter | ratio |",
             "|---|---|---:|---:|---:|---:|"]
    for r in report["results"]:
        if r["error"]:
            lines.append(f"| {r['framework']} | {r['version']} | error: {r['error']} | | | |")
            continue
        lines.append(f"| {r['framework']} | {r['version']} | {r['median_us']:.1f} | "
                     f"{r['p95_us']:.1f} | {r['calls_per_iteration']:.0f} | "
                     f"{r['ratio_to_ours']}x |")
    lines.append(f"\nTarget: {report['target']}: "
                 f"{'met' if report['target_met'] else 'NOT met'} (fastest peer "
                 f"{report['fastest_peer']}, {report['fastest_peer_ratio']}x).")
    return "\n".join(lines) + "\n"
