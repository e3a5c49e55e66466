"""The server on the embedded llama.cpp model (slow): two chats at once share the one
in-process model without crashing, and both answers are stored with their traces."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from agentmodes.knowledge.base import KnowledgeBase
from server_support import ROOT, serve_process_llm

pytestmark = [pytest.mark.slow, pytest.mark.llm]


def test_two_concurrent_chats_on_the_embedded_model(tmp_path):
    kb = tmp_path / "examples.db"
    with KnowledgeBase.open(kb) as base:
        base.ingest([str(ROOT / "examples")])
    env = {k: v for k, v in os.environ.items() if k != "AGENTMODES_LLM"}
    with serve_process_llm(tmp_path / "chat.db", kb, env=env) as url:
        def ask(question: str) -> dict:
            reply = httpx.post(f"{url}/api/chat", timeout=600,
                               json={"message": question, "mode": "react"})
            reply.raise_for_status()
            return reply.json()

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(ask, ["Wann hat die DG Agentur geöffnet?",
                                          "Was kostet eine Website?"]))
    for message in answers:
        assert message["status"] == "complete" and message["content"].strip()
        assert message["usage"]["calls"] >= 1 and message["usage"]["completion_tokens"] > 0
        assert message["agent_trace"]["mode"] == "react"
        assert message["timings"]["first_token_ms"] is not None
