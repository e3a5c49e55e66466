"""AgentChatService: chatbots on their own knowledge bases, conversations, persisted traces.

One service object serves every face (server routes, WebSocket, SSE, OpenAI-compatible API,
benchmarks). A chatbot's messages are routed to its mode (act, react or reflact, from its
ChatbotSettings or a per-message override); follow-up questions see a bounded window of the
conversation's recent turns; every answer is stored with its agent_trace, stream_metadata,
token usage and timings — also when the client goes away mid-answer (status `cancelled`)
or the run fails (status `error`), so nothing the user saw is lost.

Conversations belong to whoever started them (a `Principal`: a user, an environment key or
the local operator; service_access.py): others cannot list, read or continue them.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from pydantic import ValidationError

from .chat_trace import TraceRecorder
from .errors import AgentModesError, ConfigError
from .secret_settings import keep_masked_secrets, public_settings  # noqa: F401 (re-exported)
from .events import Event
from .ingest_worker import IngestWorker
from .private_files import private_dir
from .review_pass import review_answer
from .settings import ChatbotSettings
from .structured_answer import check_schema, schema_of, structure_answer
from .store.chat import (Chatbot, ChatStore, ChatStoreError, ConflictError, Conversation,
                         IngestJob, StoredMessage, this_process)
from .service_access import UsersAndOwners
from .store.urls import is_postgres, kb_url
from .store.users import Principal

log = logging.getLogger("agentmodes.service")

LLMFactory = Callable[[], Any]
AgentFactory = Callable[..., Any]        # (llm=, knowledge=, settings=) -> agent with .stream
KBOpener = Callable[[str], Any]          # path -> KnowledgeBase
IN_CHAT_DATABASE = "chat-database:"     # kb_path of a KB kept inside the chat database
MAX_REFLECTION_ROUNDS = 3


def _default_agent_factory(**kwargs: Any) -> Any:
    from .agent import Agent
    return Agent(**kwargs)


def _default_kb_opener(path: str) -> Any:
    from .knowledge.base import KnowledgeBase
    return KnowledgeBase.open(path)


def validate_settings(settings: dict[str, Any] | ChatbotSettings | None) -> ChatbotSettings:
    if isinstance(settings, ChatbotSettings):
        return settings
    try:
        valid = ChatbotSettings(**(settings or {}))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        raise ConfigError(f"invalid chatbot setting {where}: {first['msg']}") from None
    # A stdio MCP server is a command the server would run: only where the operator says so.
    if any(m.command for m in valid.mcp_servers) and \
            os.environ.get("AGENTMODES_MCP_COMMANDS") != "1":
        raise ConfigError("invalid chatbot setting mcp_servers: a stdio MCP server (command) "
                          "runs a program on this server; set AGENTMODES_MCP_COMMANDS=1 to "
                          "allow it, or use an HTTP MCP server (url)")
    return valid


class AgentChatService(UsersAndOwners):
    """Chatbots, conversations and runs. Thread-safe: runs happen in worker threads."""

    def __init__(self, store: ChatStore, *, llm_factory: LLMFactory,
                 data_dir: str | Path, agent_factory: AgentFactory = _default_agent_factory,
                 kb_opener: KBOpener = _default_kb_opener, history_turns: int = 3,
                 run_jobs: bool = True):
        self.store = store
        self.llm_factory = llm_factory
        self.agent_factory = agent_factory
        self.kb_opener = kb_opener
        self.data_dir = Path(data_dir)
        # A turn is one question and its answer; the window keeps prompts bounded however
        # long a conversation grows.
        self.history_turns = history_turns
        self._kbs: dict[str, Any] = {}
        self._kb_lock = threading.Lock()
        # Uploads are jobs in the database; this process runs its share of them (as does
        # every other worker on the same database). run_jobs=False: serve requests only.
        self.jobs_worker: Optional[IngestWorker] = None
        if run_jobs:
            self.jobs_worker = IngestWorker(self)
            self.jobs_worker.start()

    def close(self) -> None:
        if self.jobs_worker is not None:
            self.jobs_worker.stop()
        for kb in self._kbs.values():
            close = getattr(kb, "close", None)
            if close:
                close()
        self._kbs.clear()

    # chatbots ---------------------------------------------------------------------------
    def create_chatbot(self, name: str, settings: dict | ChatbotSettings | None = None, *,
                       kb_path: Optional[str] = None, language: Optional[str] = None,
                       description: str = "") -> Chatbot:
        name = name.strip()
        if not name or len(name) > 100 or any(c in name for c in "/\\\n\r\t"):
            raise ConfigError("a chatbot name must be 1-100 characters without slashes or "
                              "line breaks")
        valid = validate_settings(settings)
        if language:
            valid = validate_settings({**valid.model_dump(), "language": language})
        # The language column mirrors settings.language (the prompts' language) for listing.
        bot = self.store.create_chatbot(name, valid.model_dump(), kb_path=kb_path,
                                        language=valid.language, description=description)
        if kb_path is None:
            bot = self.store.update_chatbot(name, kb_path=self._new_kb_location(bot))
        return bot

    def _new_kb_location(self, bot: Chatbot) -> str:
        """Each chatbot gets its own knowledge base: in the chat database itself when that
        is PostgreSQL (recorded as `IN_CHAT_DATABASE` + name, so that every worker opens it
        with its own connection string), else a file next to the chat database. Files left
        at its paths (a delete that crashed half-way, a database from before ids were never
        reused) belong to an earlier chatbot: the new one must not inherit them."""
        if is_postgres(self.store.location or ""):
            return f"{IN_CHAT_DATABASE}chatbot-{bot.id}"
        path = self._own_kb_path(bot)
        self._remove_files(bot, str(path))
        private_dir(path.parent)
        return str(path)

    def _own_kb_path(self, bot: Chatbot) -> Path:
        return self.data_dir / "kbs" / f"chatbot-{bot.id}.db"

    def _remove_files(self, bot: Chatbot, kb_path: Optional[str]) -> None:
        """Delete the chatbot's upload folder, and its KB file if the service made it (a KB
        given with `serve --kb` is the user's own file and stays)."""
        shutil.rmtree(self.data_dir / "uploads" / f"chatbot-{bot.id}", ignore_errors=True)
        if kb_path is None or Path(kb_path) != self._own_kb_path(bot):
            return
        self._forget_kb(kb_path)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(kb_path + suffix).unlink(missing_ok=True)

    def _forget_kb(self, kb_path: str) -> None:
        with self._kb_lock:
            kb = self._kbs.pop(kb_path, None)
        if kb is not None and hasattr(kb, "close"):
            kb.close()

    def kb_location(self, kb_path: str) -> str:
        """Where a recorded kb_path is: a file, a URL, or a KB inside the chat database."""
        if kb_path.startswith(IN_CHAT_DATABASE):
            return kb_url(self.store.location or "", kb_path[len(IN_CHAT_DATABASE):])
        return kb_path

    def ensure_chatbot(self, name: str, *, kb_path: Optional[str] = None,
                       settings: dict | None = None) -> Chatbot:
        """The chatbot `name`, created if missing (used for `serve --kb`)."""
        bot = self.store.find_chatbot(name)
        if bot is None:
            try:
                return self.create_chatbot(name, settings, kb_path=kb_path)
            except ConflictError:       # another server process on this file was quicker
                bot = self.store.get_chatbot(name)
        if kb_path is not None and bot.kb_path != kb_path:
            bot = self.store.update_chatbot(name, kb_path=kb_path)
        return bot

    def get_chatbot(self, name: str) -> Chatbot:
        return self.store.get_chatbot(name)

    def list_chatbots(self) -> list[Chatbot]:
        return self.store.list_chatbots()

    def update_chatbot(self, name: str, *, settings: Optional[dict] = None,
                       language: Optional[str] = None,
                       description: Optional[str] = None) -> Chatbot:
        current = self.store.get_chatbot(name)
        merged = None
        if settings is not None or language:
            # A masked secret sent back unchanged by a client keeps the stored value.
            incoming = keep_masked_secrets(current.settings, settings or {})
            if language:
                incoming["language"] = language
            merged = validate_settings({**current.settings, **incoming}).model_dump()
        return self.store.update_chatbot(name, settings=merged, description=description,
                                         language=merged["language"] if merged else None)

    def delete_chatbot(self, name: str) -> None:
        """Delete the chatbot with its conversations, documents, jobs and upload folder; the
        KB the service made for it goes too (a KB given by path or URL stays)."""
        bot = self.store.get_chatbot(name)
        self.store.delete_chatbot(name)
        self._remove_files(bot, bot.kb_path)
        if bot.kb_path and bot.kb_path.startswith(IN_CHAT_DATABASE):
            self._forget_kb(bot.kb_path)
            from .knowledge.backends.postgres_schema import drop_kb
            drop_kb(self.kb_location(bot.kb_path))

    def upload_dir(self, bot: Chatbot) -> Path:
        return private_dir(self.data_dir / "uploads" / f"chatbot-{bot.id}")

    def knowledge(self, bot: Chatbot) -> Any:
        """The chatbot's knowledge base, opened once per process and shared by its runs."""
        if not bot.kb_path:
            return None
        with self._kb_lock:
            kb = self._kbs.get(bot.kb_path)
            if kb is None:
                kb = self._kbs[bot.kb_path] = self.kb_opener(self.kb_location(bot.kb_path))
            return kb

    def history(self, conversation_id: str) -> list[dict[str, str]]:
        """The recent turns a follow-up question sees: complete messages only, oldest first."""
        recent = self.store.list_messages(conversation_id, last=self.history_turns * 2 + 4)
        turns = [{"role": m.role, "content": m.content} for m in recent
                 if m.status == "complete" and m.content]
        return turns[-self.history_turns * 2:]

    # runs -------------------------------------------------------------------------------
    def settings_for(self, bot: Chatbot, mode: Optional[str] = None) -> ChatbotSettings:
        settings = validate_settings(bot.settings)
        if mode:
            settings = validate_settings({**settings.model_dump(), "agent_mode": mode})
        return settings

    def stream(self, chatbot: str, query: str, *, conversation_id: Optional[str] = None,
               mode: Optional[str] = None, history: Optional[list[dict]] = None,
               reflect: int = 0, response_format: Optional[dict] = None,
               user: Optional[Principal] = None) -> Iterator[Event]:
        """Run one question and yield its events; the answer is stored before `done` is yielded.

        Closing the generator early (client gone) closes the agent's stream — and with it
        the LLM request — and stores the partial answer as `cancelled`. `history` overrides
        the stored conversation (the OpenAI-compatible API sends its own). `reflect` > 0
        adds that many Reflection rounds (critique, refine) over the mode's answer.
        `response_format` (OpenAI's json_object / json_schema) turns the final answer into
        JSON of that shape (structured_answer.py); it is what is stored and yielded. `user`
        owns a new conversation and may only continue its own (admins: any).
        """
        if not 0 <= reflect <= MAX_REFLECTION_ROUNDS:
            raise ConfigError(f"reflect takes 0 to {MAX_REFLECTION_ROUNDS} rounds, not {reflect}")
        query = (query or "").strip()
        if not query:
            raise ConfigError("the question is empty")
        if response_format:
            check_schema(schema_of(response_format))
        bot = self.store.get_chatbot(chatbot)
        settings = self.settings_for(bot, mode)
        if conversation_id:
            conv = self.get_conversation(conversation_id, user=user)
            if conv.chatbot_id != bot.id:
                raise ChatStoreError(f"conversation {conversation_id!r} belongs to chatbot "
                                     f"{conv.chatbot!r}, not {bot.name!r}")
        else:
            conv = self.store.create_conversation(bot, title=query[:80],
                                                  owner=user.owner if user else None)
        if history is None:
            history = self.history(conv.id)
        return self._run(bot, settings, conv, query, history, reflect, response_format)

    def _run(self, bot: Chatbot, settings: ChatbotSettings, conv: Conversation, query: str,
             history: list[dict], reflect: int,
             response_format: Optional[dict] = None) -> Iterator[Event]:
        recorder = TraceRecorder(settings.agent_mode)
        events: Optional[Iterator[Event]] = None
        outcome, error = "cancelled", None
        stored: Optional[StoredMessage] = None
        # The question and a `running` answer row are stored when the run starts: a run that
        # never starts (the client left at once) leaves no question without an answer, and a
        # process killed mid-answer leaves a row the next start marks as failed.
        self.store.add_message(conv.id, "user", query)
        answer = self.store.add_message(conv.id, "assistant", "", status="running",
                                        mode=settings.agent_mode, worker=this_process())
        try:
            _log_route(bot.name, settings, reflect)
            llm = self.llm_factory()
            agent = self.agent_factory(llm=llm, knowledge=self.knowledge(bot),
                                       settings=settings)
            events = agent.stream(query, history=history)
            for event in events:
                _log_event(settings, event)
                if event.get("done") and reflect:
                    for step in review_answer(llm, query, event, rounds=reflect,
                                              language=settings.language):
                        if step.get("done"):
                            event = step
                            break
                        recorder.add(step)
                        yield step
                if event.get("done") and response_format:
                    event = structure_answer(llm, query, event, response_format)
                recorder.add(event)
                if event.get("done"):
                    stored = self._save(answer.id, recorder, "complete")
                    event = {**event, "conversation_id": conv.id, "message_id": stored.id,
                             "mode": settings.agent_mode, "usage": recorder.usage}
                yield event
            if stored is None:
                outcome, error = "error", "the agent stopped without a final answer"
                yield {"status": "error", "message": error, "fatal": True,
                       "conversation_id": conv.id}
        except GeneratorExit:
            outcome = "cancelled"
            raise
        except Exception as err:   # one failed run must not take the service down
            outcome = "error"
            error = str(err) if isinstance(err, AgentModesError) else \
                f"internal error ({type(err).__name__})"
            log.exception("run failed for chatbot %s", bot.name)
            yield {"status": "error", "message": error, "fatal": True, "conversation_id": conv.id}
        finally:
            if events is not None and hasattr(events, "close"):
                events.close()          # closes the LLM request of an unfinished run
            if stored is None:
                self._save(answer.id, recorder, outcome, error)

    def _save(self, message_id: int, recorder: TraceRecorder, status: str,
              error: Optional[str] = None) -> StoredMessage:
        return self.store.update_message(
            message_id, recorder.answer, status=status, mode=recorder.mode,
            agent_trace=recorder.agent_trace(), stream_metadata=recorder.stream_metadata(),
            usage=recorder.usage, sources=recorder.sources, timings=recorder.timings(),
            error=error)

    def ask(self, chatbot: str, query: str, **kwargs: Any) -> StoredMessage:
        """Run one question to the end and return the stored answer."""
        last: Optional[Event] = None
        for last in self.stream(chatbot, query, **kwargs):
            pass
        if last is None or not last.get("done"):
            message = (last or {}).get("message", "the run ended without an answer")
            raise AgentModesError(message)
        return self.store.get_message(last["message_id"])

    # ingest -----------------------------------------------------------------------------
    def upload(self, chatbot: str, files: list[tuple[str, bytes]]) -> IngestJob:
        """Store the files (safe names, checked content) as the chatbot's documents and queue
        the job that ingests them; any worker on this database may run it."""
        bot = self.store.get_chatbot(chatbot)
        job_id = self.store.enqueue_upload(bot, files, owner=f"{socket.gethostname()}:"
                                                              f"{os.getpid()}")
        if self.jobs_worker is not None:
            self.jobs_worker.wake()
        return self.store.get_job(job_id)

    def start_ingest(self, chatbot: str, paths: list[Path]) -> IngestJob:
        """Queue an ingest of files on this machine (read now, stored as documents)."""
        return self.upload(chatbot, [(Path(p).name, Path(p).read_bytes()) for p in paths])

    def documents(self, chatbot: str) -> list[Any]:
        return self.store.documents(self.store.get_chatbot(chatbot))

    def document(self, chatbot: str, name: str) -> Optional[bytes]:
        return self.store.document_content(self.store.get_chatbot(chatbot).id, name)

    def jobs(self, chatbot: str) -> list[IngestJob]:
        return self.store.list_jobs(self.store.get_chatbot(chatbot))


def _mode_label(mode: str) -> str:
    from .modes.spec import mode_label
    return mode_label(mode)


def _log_route(chatbot: str, settings: ChatbotSettings, reflect: int) -> None:
    """Seed 000/002: the service routes each message to its mode."""
    if log.isEnabledFor(logging.INFO):
        log.info("[AgentChatService] Routing to %s mode (chatbot %r, task_type %s, "
                 "max_iterations %d%s)", _mode_label(settings.agent_mode), chatbot,
                 settings.task_type, settings.max_iterations,
                 f", {reflect} reflection round(s)" if reflect else "")


def _log_event(settings: ChatbotSettings, event: Event) -> None:
    """The seeds' log lines for what a run did ("Logs" in seeds 000 and 002)."""
    status = event.get("status")
    if status == "adaptive_iteration":
        log.info("[AgentChatService] %s adaptive iteration: high confidence on iteration %s",
                 _mode_label(settings.agent_mode), event.get("iteration"))
    elif status == "max_iterations_reached":
        log.info("[AgentChatService] %s max iterations reached (%s): answering from the "
                 "observations", _mode_label(settings.agent_mode), event.get("max"))
