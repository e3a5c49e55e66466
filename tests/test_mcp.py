"""MCP both ways with the official SDK: `agentmodes mcp` as a real server (stdio
subprocess and streamable HTTP on an OS-chosen port) driven by the SDK's own Client, and
MCP servers' tools inside the agent, listed and traced like built-in tools."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from kb_fixtures import examples_kb, scripted_replies  # noqa: E402


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory):
    return examples_kb(tmp_path_factory.mktemp("mcp") / "kb.db")


replies = scripted_replies


def server_args(kb: Path, *extra: str) -> list[str]:
    return ["-m", "agentmodes", "mcp", "--kb", str(kb), *extra]


async def exercise(client: Client) -> dict:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    found = await client.call_tool("search", {"query": "Öffnungszeiten", "mode": "lexical",
                                              "k": 2})
    answer = await client.call_tool("ask", {"question": "Wann hat die DG Agentur geöffnet?",
                                            "mode": "react"})
    empty = await client.call_tool("search", {"query": "  "})
    resources = (await client.list_resources()).resources
    faq = next(r for r in resources if r.name == "faq.md")
    text = (await client.read_resource(str(faq.uri))).contents[0].text
    return {"tools": tools, "search": json.loads(found.content[0].text),
            "ask": json.loads(answer.content[0].text), "empty": empty,
            "resources": resources, "faq": text}


def check(result: dict) -> None:
    assert set(result["tools"]) == {"search", "ask"}
    assert "query" in result["tools"]["search"].input_schema["properties"]
    hits = result["search"]["hits"]
    assert hits[0]["rank"] == 1 and "Mo-Fr 9-18 Uhr" in " ".join(h["text"] for h in hits)
    assert 0 <= hits[0]["confidence"] <= 1
    assert result["ask"]["answer"].startswith("Mo-Fr 9-18 Uhr [1]")
    assert result["ask"]["mode"] == "react" and result["ask"]["sources"][0]["index"] == 1
    assert result["empty"].is_error and "empty query" in result["empty"].content[0].text
    assert len(result["resources"]) == 6
    assert result["faq"].startswith("# Häufige Fragen") and "Mo-Fr 9-18 Uhr" in result["faq"]


SCRIPT = ['THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")',
          "THOUGHT: found\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"]


def test_stdio_server_with_the_sdk_client(kb_file, tmp_path):
    script = replies(tmp_path, SCRIPT)
    params = StdioServerParameters(command=sys.executable,
                                   args=server_args(kb_file, "--llm", f"scripted:{script}"))

    async def run() -> dict:
        async with Client(params) as client:
            return await exercise(client)

    check(asyncio.run(run()))


@contextmanager
def http_server(kb: Path, *extra: str):
    """`agentmodes mcp --transport http --port 0` in a subprocess; yields its URL."""
    proc = subprocess.Popen([sys.executable, *server_args(kb, "--transport", "http",
                                                          "--port", "0", *extra)],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        match = re.search(r"MCP server at (http://127\.0\.0\.1:\d+/mcp)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_streamable_http_server_on_an_os_chosen_port(kb_file, tmp_path):
    script = replies(tmp_path, SCRIPT)
    with http_server(kb_file, "--llm", f"scripted:{script}") as url:
        async def run() -> dict:
            async with Client(url) as client:
                return await exercise(client)

        check(asyncio.run(run()))


def test_http_on_a_public_address_is_refused(kb_file):
    done = subprocess.run([sys.executable, *server_args(kb_file, "--transport", "http",
                                                        "--host", "0.0.0.0")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no authentication" in done.stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_agent_calls_an_mcp_servers_tool_like_any_tool(kb_file, tmp_path, transport):
    """A KB served over MCP (stdio or HTTP) is a tool of the agent: in the prompt's tool
    list, called by name, its result the observation and a citable source."""
    with ExitStack() as stack:
        if transport == "stdio":
            server = {"command": sys.executable, "args": server_args(kb_file)}
        else:
            server = {"url": stack.enter_context(http_server(kb_file))}
        agent_with_mcp_tools(server)


def agent_with_mcp_tools(server: dict) -> None:
    from agentmodes import Agent, ChatbotSettings
    from agentmodes.llm.scripted import ScriptedModel
    from agentmodes.tools.mcp_tools import close_all

    model = ScriptedModel(['THOUGHT: ask the handbook server\n'
                           'ACTION: handbook_search("Öffnungszeiten")',
                           "THOUGHT: it says so\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"])
    settings = ChatbotSettings(agent_mode="react", tools_enabled=["respond"],
                               adaptive_iteration=False, mcp_servers=[{
                                   "name": "handbook", "tools": ["search"], **server}])
    try:
        events = list(Agent(llm=model, settings=settings).stream("Wann geöffnet?"))
    finally:
        close_all()
    system = model.prompts[0][0]["content"]
    assert "handbook_search" in system and "handbook_ask" not in system
    action = next(e for e in events if e.get("status") == "action")
    assert action["action"] == "handbook_search" and action["param"] == "Öffnungszeiten"
    observation = next(e for e in events if e.get("status") == "observation")
    assert "Öffnungszeiten" in observation["result_preview"] and not observation["error"]
    seen = json.dumps(model.prompts[1], ensure_ascii=False)   # the whole observation
    assert "Mo-Fr 9-18 Uhr" in seen
    done = events[-1]
    assert done["full_response"].startswith("Mo-Fr 9-18 Uhr [1]")
    assert done["sources"][0]["source"] == "mcp://handbook/search"


def test_an_unreachable_mcp_server_is_an_observation_not_a_crash(tmp_path):
    from agentmodes import Agent, ChatbotSettings
    from agentmodes.llm.scripted import ScriptedModel

    model = ScriptedModel(['THOUGHT: try\nACTION: gone_unavailable("x")',
                           "THOUGHT: no luck\nFINAL ANSWER: Das weiß ich nicht."])
    settings = ChatbotSettings(agent_mode="react", tools_enabled=["respond"], mcp_servers=[
        {"name": "gone", "command": str(tmp_path / "no-such-server")}])
    events = list(Agent(llm=model, settings=settings).stream("Frage?"))
    observation = next(e for e in events if e.get("status") == "observation")
    assert observation["error"] and "could not be reached" in observation["result_preview"]
    assert events[-1]["done"] is True


def test_server_side_settings_guard_commands_and_mask_mcp_secrets(monkeypatch):
    from agentmodes.errors import ConfigError
    from agentmodes.service import public_settings, validate_settings

    stdio = {"mcp_servers": [{"name": "shell", "command": "sh", "args": ["-c", "id"]}]}
    monkeypatch.delenv("AGENTMODES_MCP_COMMANDS", raising=False)
    with pytest.raises(ConfigError, match="AGENTMODES_MCP_COMMANDS=1"):
        validate_settings(stdio)                 # what the REST API validates chatbots with
    monkeypatch.setenv("AGENTMODES_MCP_COMMANDS", "1")
    assert validate_settings(stdio).mcp_servers[0].command == "sh"
    http = validate_settings({"mcp_servers": [{"name": "crm", "url": "https://crm/mcp",
                                               "headers": {"Authorization": "Bearer s3cret"}}]})
    shown = public_settings(http.model_dump())
    assert shown["mcp_servers"][0]["headers"] == {"Authorization": "***"}
    assert "s3cret" not in json.dumps(shown)


def test_documents_ingested_while_the_server_runs_are_listed(tmp_path):
    kb = examples_kb(tmp_path / "kb.db")
    new = tmp_path / "neu" / "anfahrt.md"
    new.parent.mkdir()
    new.write_text("# Anfahrt\n\nMit der U1 bis Hauptbahnhof, dann fünf Minuten zu Fuß.\n")
    with http_server(kb) as url:
        async def listing() -> list:
            async with Client(url) as client:
                return (await client.list_resources()).resources

        before = asyncio.run(listing())
        done = subprocess.run([sys.executable, "-m", "agentmodes", "ingest", str(new.parent),
                               "--kb", str(kb), "--no-embed"], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr

        async def after_ingest() -> tuple:
            async with Client(url) as client:
                resources = (await client.list_resources()).resources
                added = next(r for r in resources if r.name == "anfahrt.md")
                text = (await client.read_resource(str(added.uri))).contents[0].text
                return resources, text

        after, text = asyncio.run(after_ingest())
    assert len(after) == len(before) + 1
    assert "U1 bis Hauptbahnhof" in text
