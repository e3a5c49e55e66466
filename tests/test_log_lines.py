"""Log lines (issue 13 item 4): the seeds' wording through Python logging, `serve
--log-level` and AGENTMODES_LOG_LEVEL, as a user sees them on stderr."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

import httpx
import pytest

from agentmodes.server.process import free_port
from server_support import REFLACT_SCRIPT, make_service, write_script

SEARCH = REFLACT_SCRIPT[0]


def records(caplog, name="agentmodes.service"):
    return [r.getMessage() for r in caplog.records if r.name == name]


def ask(service, **kwargs):
    return service.ask("default", "Wann hat die DG Agentur geöffnet?", **kwargs)


def test_adaptive_iteration_in_the_seeds_words_for_reflact_and_act(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="agentmodes")
    confident = {"adaptive_iteration": True, "high_confidence_threshold": 0.0}
    service = make_service(tmp_path, script=[SEARCH, "Mo-Fr 9-18 Uhr [1]."], settings=confident)
    ask(service)
    assert "[AgentChatService] ReflAct adaptive iteration: high confidence on iteration 1" \
        in records(caplog)
    caplog.clear()
    service = make_service(tmp_path, script=['ACTION: rag_search("Öffnungszeiten")',
                                             "Mo-Fr 9-18 Uhr [1]."], settings=confident)
    ask(service, mode="act")
    assert "[AgentChatService] ACT adaptive iteration: high confidence on iteration 1" \
        in records(caplog)


def test_mode_routing_and_max_iterations(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="agentmodes")
    service = make_service(tmp_path, script=[SEARCH, "Mo-Fr 9-18 Uhr [1]."],
                           settings={"agent_max_iterations": 1, "task_type": "lookup"})
    ask(service, mode="react")
    lines = records(caplog)
    assert lines[0] == ("[AgentChatService] Routing to ReAct mode (chatbot 'default', "
                        "task_type lookup, max_iterations 1)")
    assert "[AgentChatService] ReAct max iterations reached (1): answering from the " \
           "observations" in lines


def test_the_loop_logs_its_own_decisions(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="agentmodes")
    service = make_service(tmp_path, script=["REFLECTION: weiß es\nFINAL ANSWER: immer",
                                             "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1]"])
    ask(service)
    assert any("searching the question first (require_search)" in m
               for m in records(caplog, "agentmodes.modes.loop"))


def _serve(tmp_path, *args, env=None):
    from server_support import open_kb, write_docs

    kb = tmp_path / "kb.db"
    with open_kb(str(kb)) as base:
        base.ingest([str(write_docs(tmp_path / "docs"))])
    port = free_port()
    log = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "serve",
         "--port", str(port), "--db", str(tmp_path / "chat.db"), "--kb", str(kb),
         "--llm", f"scripted:{write_script(tmp_path / 'script.json')}", *args],
        env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=log)
    return proc, f"http://127.0.0.1:{port}", log


def _chat_and_stop(tmp_path, proc, url, log) -> str:
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        reply = httpx.post(f"{url}/api/chat", json={"message": "Wann geöffnet?"}, timeout=60)
        assert reply.status_code == 200, reply.text
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    return (tmp_path / "stderr.txt").read_text()


@pytest.mark.parametrize("how", ["option", "environment"])
def test_serve_log_level_shows_the_service_lines(tmp_path, how):
    if how == "option":
        proc, url, log = _serve(tmp_path, "--log-level", "debug")
    else:
        proc, url, log = _serve(tmp_path, env={"AGENTMODES_LOG_LEVEL": "DEBUG"})
    stderr = _chat_and_stop(tmp_path, proc, url, log)
    assert "agentmodes.service: [AgentChatService] Routing to ReflAct mode" in stderr
    assert "DEBUG agentmodes" in stderr or "INFO agentmodes" in stderr


def test_serve_default_info_and_warning_silences_info(tmp_path):
    proc, url, log = _serve(tmp_path, "--log-level", "warning")
    assert "[AgentChatService]" not in _chat_and_stop(tmp_path, proc, url, log)


def test_a_bad_log_level_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "serve", "--log-level", "loud"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("agentmodes: error: --log-level: unknown log level 'loud' "
                                   "(choose debug, info, warning, error, critical)")


def test_any_command_logs_with_agentmodes_log_level(tmp_path):
    """`ask` on the scripted model: the loop's lines go to stderr, the answer stays alone on
    stdout."""
    from server_support import open_kb, write_docs

    kb = tmp_path / "kb.db"
    with open_kb(str(kb)) as base:
        base.ingest([str(write_docs(tmp_path / "docs"))], embed=False)
    script = write_script(tmp_path / "s.json", ["REFLECTION: weiß es\nFINAL ANSWER: immer",
                                                "REFLECTION: r\nFINAL ANSWER: Mo-Fr [1]"])
    done = subprocess.run(
        [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "ask",
         "Wann geöffnet?", "--kb", str(kb), "--llm", f"scripted:{script}"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "AGENTMODES_LOG_LEVEL": "info"})
    assert done.returncode == 0, done.stderr
    assert "INFO agentmodes.modes.loop: reflact: answer before any search" in done.stderr
    assert "agentmodes" not in done.stdout.split("Quellen")[0].lower()
