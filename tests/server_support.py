"""Helpers for the server tests: a real service on a real SQLite file and KB, a scripted
model (optionally slow, to cancel mid-run), an in-thread uvicorn server on 127.0.0.1, and
`agentmodes serve` as a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import uvicorn

from agentmodes.knowledge.base import KnowledgeBase
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.server import ServerConfig, create_app
from agentmodes.server.process import free_port, running_server
from agentmodes.service import AgentChatService
from agentmodes.store.chat import ChatStore
from kb_fixtures import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]
DOC = ("# Kontakt\n\nDie DG Agentur hat montags bis freitags von 9 bis 18 Uhr geöffnet, "
       "samstags nach Vereinbarung.\n\n## Telefon\n\nWir sind unter +49 911 97554990 erreichbar.\n")
# A two-step ReflAct run: search, then answer citing the hit.
REFLACT_SCRIPT = [
    'REFLECTION: Ich weiß noch nichts über die Öffnungszeiten.\n'
    'ACTION: rag_search("Öffnungszeiten DG Agentur")',
    'REFLECTION: Die Suche ergab die Öffnungszeiten. Das Ziel ist erreicht.\n'
    'FINAL ANSWER: Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr geöffnet [1].',
]
ANSWER = "Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr geöffnet [1]."


class SlowScriptedModel(ScriptedModel):
    """A ScriptedModel that waits between chunks and records whether a stream was closed
    before it finished (what a cancelled HTTP request to a real backend looks like)."""

    def __init__(self, replies, delay: float = 0.05, **kwargs):
        super().__init__(replies, chunk_size=4, **kwargs)
        self.delay = delay
        self.closed_early = threading.Event()
        self.finished_calls = 0

    def stream(self, messages, options=None):
        finished = False
        try:
            for chunk in super().stream(messages, options):
                time.sleep(self.delay)
                yield chunk
            finished = True
            self.finished_calls += 1
        finally:
            if not finished:
                self.closed_early.set()


def write_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kontakt.md").write_text(DOC, encoding="utf-8")
    return folder


def open_kb(path: str) -> KnowledgeBase:
    return KnowledgeBase.open(path, embedder=HashingEmbedder())


def make_service(tmp_path: Path, *, script=None, model_factory=None, db: Optional[Path] = None,
                 settings: Optional[dict] = None) -> AgentChatService:
    """A service with a `default` chatbot whose KB holds the contact page.

    Adaptive exit is off unless `settings` turn it on, so the scripted two-step run does
    not depend on the KB's confidence calibration.
    """
    kb_path = tmp_path / "kb.db"
    if not kb_path.exists():
        with open_kb(str(kb_path)) as kb:
            kb.ingest([str(write_docs(tmp_path / "docs"))])
    script = script or REFLACT_SCRIPT
    factory = model_factory or (lambda: ScriptedModel(script))
    service = AgentChatService(ChatStore.open(str(db or tmp_path / "chat.db")),
                               llm_factory=factory, data_dir=tmp_path / "data",
                               kb_opener=open_kb)
    service.ensure_chatbot("default", kb_path=str(kb_path),
                           settings={"adaptive_iteration": False, **(settings or {})})
    return service


@contextlib.contextmanager
def live_server(service: AgentChatService, config: Optional[ServerConfig] = None
                ) -> Iterator[str]:
    """A real uvicorn server on 127.0.0.1 in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service, config or ServerConfig()),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def write_script(path: Path, replies=None) -> Path:
    path.write_text(json.dumps(replies or REFLACT_SCRIPT, ensure_ascii=False), encoding="utf-8")
    return path


def serve_process(db: Path, kb: Path, script: Path, *, env: Optional[dict] = None):
    """`agentmodes serve` as a subprocess (what a user runs); a context yielding its URL."""
    return running_server(db, kb=kb, llm=f"scripted:{script}",
                          env={**os.environ, **(env or {})})


def serve_process_llm(db: Path, kb: Path, *, env: dict):
    """`agentmodes serve` on the embedded default model (no --llm)."""
    return running_server(db, kb=kb, env=env, startup_timeout=120)


def stream_ws(ws, request: dict) -> list[dict]:
    """Send one chat request over a TestClient WebSocket; collect events until the end."""
    ws.send_json(request)
    events = []
    while True:
        event = ws.receive_json()
        events.append(event)
        if event.get("done") or event.get("cancelled") or event.get("fatal") or event.get("code"):
            return events
