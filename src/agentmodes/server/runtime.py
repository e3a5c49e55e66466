"""Wire a service for `agentmodes serve` and the benchmarks: chat DB, data dir, model, KB.

The LLM spec decides how runs share a model: a scripted model replays its script from the
start for every run (each conversation is one deterministic replay); an OpenAI-compatible
client is shared freely (HTTP calls are independent); the embedded llama.cpp model is one
in-process context, so it is shared but used by one call at a time.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator, Optional

from ..errors import ConfigError
from ..service import AgentChatService
from ..store.chat import ChatStore
from ..store.urls import is_postgres


class SerializedModel:
    """A shared model that serves one stream at a time (llama.cpp is not thread-safe)."""

    def __init__(self, model: Any):
        self._model = model
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:       # name, supports_tools, supports_grammar...
        return getattr(self._model, name)

    def stream(self, messages: list, options: Any = None) -> Iterator[Any]:
        with self._lock:
            yield from self._model.stream(messages, options)

    def close(self) -> None:
        # Shared by every run: a run finishing must not close it for the others.
        pass


def llm_factory(spec: Optional[str]):
    from ..llm.registry import load_llm
    if spec and spec.startswith("scripted:"):
        load_llm(spec)              # fail at startup, not on the first question
        return lambda: load_llm(spec)
    model = load_llm(spec)
    shared = model if spec and spec.startswith("openai:") else SerializedModel(model)
    return lambda: shared


def has_users(db: str) -> bool:
    """Whether the chat database at `db` already has users (without creating it)."""
    if not is_postgres(db) and not Path(db).expanduser().is_file():
        return False
    store = ChatStore.open(db)
    try:
        return store.users.any()
    finally:
        store.close()


def data_dir_for(db: str, data_dir: Optional[str] = None) -> Path:
    """Where a worker keeps uploaded files while it ingests them (and, with SQLite, the
    per-chatbot KB files): --data-dir / AGENTMODES_DATA_DIR, else next to the chat database
    (chat.db -> chat-files/), else for a database URL ./agentmodes-files. Workers on one
    database should use the same path: a document's path is its identity in the KB."""
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    if is_postgres(db):
        return Path.cwd() / "agentmodes-files"
    path = Path(db).expanduser().resolve()
    return path.with_name(f"{path.stem}-files")


def kb_location(kb: str) -> str:
    """A --kb as the chatbot records it: a resolved path, or the URL as given."""
    return kb if "://" in kb else str(Path(kb).expanduser().resolve())


def check_kb(kb: str) -> None:
    """--kb must name an existing knowledge base (nothing is created by `serve`)."""
    if "://" in kb:
        from ..knowledge.base import KnowledgeBase
        KnowledgeBase.open(kb, create=False).close()
    elif not Path(kb).expanduser().is_file():
        raise ConfigError(f"knowledge base {kb} does not exist; create it with "
                          f"`agentmodes ingest DOCS --kb {kb}`")


def build_service(db: str, *, kb: Optional[str] = None, llm: Optional[str] = None,
                  data_dir: Optional[str] = None, **kwargs: Any) -> AgentChatService:
    if kb is not None:
        check_kb(kb)
    if "llm_factory" not in kwargs:      # a bad --llm fails before any file is created
        kwargs["llm_factory"] = llm_factory(llm)
    store = ChatStore.open(db)
    store.fail_orphaned_runs()
    service = AgentChatService(store, data_dir=data_dir_for(db, data_dir), **kwargs)
    if kb is not None:
        service.ensure_chatbot("default", kb_path=kb_location(kb))
    return service
