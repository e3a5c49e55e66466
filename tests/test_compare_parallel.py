"""`agentmodes compare` against an OpenAI-compatible server on loopback: the modes of a
question go out at the same time (the server sees them overlap), `--workers 1` sends them one
after another, and the figures still add up with each run's events when the lanes interleave."""

from __future__ import annotations

import threading
import time

import pytest

from llm_fault_server import FaultServer, finish_chunk, sse, text_chunk, usage_chunk
from test_cli_conventions import cli
from test_compare_cli import MODES, QUESTIONS, RUN, assert_adds_up, events_by_run, kb_file, lines

__all__ = ["kb_file"]           # the module fixture, shared with the CLI tests
PROMPT_TOKENS, COMPLETION_TOKENS = 120, 7


class ModeServer(FaultServer):
    """Answers every request in the step format of the mode that asked (read off the system
    prompt): a search first, an answer once the conversation has a step in it. Each reply
    waits a little, and the server counts how many requests it had in flight at once."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.lock, self.in_flight, self.most_at_once = threading.Lock(), 0, 0
        self.play(self.reply)
        self.delay = delay

    def reply(self, handler) -> None:
        messages = handler.body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        mode = "reflact" if "REFLECTION" in system else "react" if "THOUGHT" in system else "act"
        answered = any(m["role"] == "assistant" for m in messages)
        with self.lock:
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
        sse([text_chunk(RUN[mode][int(answered)]), finish_chunk(),
             usage_chunk(PROMPT_TOKENS, COMPLETION_TOKENS)])(handler)


@pytest.fixture
def server():
    srv = ModeServer(delay=0.5)
    yield srv
    srv.close()


def compare(server, kb_file, tmp_path, questions, *extra):
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(questions) + "\n", encoding="utf-8")
    out = tmp_path / "report"
    done = cli("compare", str(path), "--kb", str(kb_file), "--llm", "openai:stand-in",
               "--judge", "off", "--json", "--out", str(out), *extra,
               env_extra={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": ""})
    assert done.returncode == 0, done.stderr
    return [r for r in lines(done.stdout) if r["type"] == "run"], out


def test_the_modes_run_side_by_side_and_still_add_up(server, kb_file, tmp_path):
    runs, out = compare(server, kb_file, tmp_path, QUESTIONS)
    assert server.most_at_once == len(MODES)        # one lane per mode, all at once
    assert {(r["question_index"], r["variant"]) for r in runs} == {
        (q, m) for q in (1, 2) for m in MODES}
    events = events_by_run(out / "compare.events.jsonl")
    for run in runs:
        assert run["error"] is None, run["error"]
        # Each run's events stay its own although the lanes interleaved.
        assert_adds_up(run, events[(run["question_index"], run["variant"])])
        assert run["prompt_tokens"] == PROMPT_TOKENS * run["llm_calls"]
        assert run["completion_tokens"] == COMPLETION_TOKENS * run["llm_calls"]
        assert run["sources_retrieved"] >= 1
    assert len(server.requests) == sum(r["llm_calls"] for r in runs)


def test_workers_1_sends_one_run_at_a_time(server, kb_file, tmp_path):
    runs, _ = compare(server, kb_file, tmp_path, QUESTIONS[:1], "--workers", "1")
    assert server.most_at_once == 1
    assert [r["variant"] for r in runs] == list(MODES)
