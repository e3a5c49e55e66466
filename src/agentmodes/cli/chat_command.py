"""`agentmodes chat`: a conversation with a chatbot from the terminal.

The conversation is the service's (AgentChatService, the same one `serve` uses), stored in
the chat database (`--db`, default ~/.local/share/agentmodes/chat.db): every answer with
its trace, follow-up questions see the recent turns, and `-c` continues the last
conversation after a restart. Lines typed are kept in a readline history file beside the
database, so the arrow keys bring back earlier questions.

Each line is a question; `/new` starts a new conversation, `/exit` (or Ctrl-D) ends.
Piped stdin works too: each line is one question, answered in turn.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from . import output
from .ask_command import LLM_HELP, MODE_HELP, SYSTEM_HELP, Mode, TraceView
from .kb_commands import KB_HELP, kb_path
from .main import app, fail

DB_HELP = ("Chat database (SQLite file or postgresql:// URL; default "
           "$AGENTMODES_CHAT_DB, else ~/.local/share/agentmodes/chat.db).")


def default_chat_db() -> Path:
    env = os.environ.get("AGENTMODES_CHAT_DB", "").strip()
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME", "").strip() or Path.home() / ".local" / "share"
    return Path(data) / "agentmodes" / "chat.db"


@app.command()
def chat(
    kb: Optional[str] = typer.Option(None, "--kb", help=KB_HELP),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    chatbot: str = typer.Option("default", "--chatbot",
                                help="Chatbot to talk to (--kb points it at that file)."),
    continue_last: bool = typer.Option(False, "-c", "--continue",
                                       help="Continue the chatbot's last conversation."),
    conversation: Optional[str] = typer.Option(None, "--conversation",
                                               help="Continue this conversation (its id)."),
    mode: Optional[Mode] = typer.Option(None, "--mode", help=MODE_HELP +
                                        " Default: the chatbot's setting."),
    llm: Optional[str] = typer.Option(None, "--llm", help=LLM_HELP),
    system: Optional[str] = typer.Option(None, "--system", help=SYSTEM_HELP +
                                         " Saved in the chatbot's settings."),
    as_json: bool = typer.Option(False, "--json", help=output.JSON_HELP),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Chat with a chatbot over its knowledge base; the conversation is kept.

    \b
    Examples:
      agentmodes chat --kb kb.db
      agentmodes chat -c                       # continue the last conversation
      agentmodes chat --kb kb.db --mode react --system "Antworte kurz."
      printf 'Öffnungszeiten?\nUnd am Samstag?\n' | agentmodes chat --kb kb.db --quiet
    """
    from ..server.runtime import build_service

    output.set_quiet(quiet)
    if continue_last and conversation:
        raise fail("-c continues the last conversation; --conversation names one: not both")
    database = db or str(default_chat_db())
    if "://" not in database:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    # The KB: --kb, else $AGENTMODES_KB for a new chatbot, else the chatbot's own.
    chosen = kb_path(kb) if kb is not None or os.environ.get("AGENTMODES_KB") else None
    # run_jobs=False: a terminal chat runs no server's upload jobs.
    service = build_service(database, llm=llm or os.environ.get("AGENTMODES_LLM"),
                            run_jobs=False)
    try:
        bot = _chatbot(service, chatbot, chosen, system)
        conv_id = _conversation(service, bot.name, continue_last, conversation)
        session = ChatSession(service, bot.name, conv_id, mode, as_json)
        session.loop(_lines(Path(database).expanduser().parent / "chat_history"
                            if "://" not in database else None))
    finally:
        service.close()
    if session.failures:
        raise typer.Exit(1)


def _chatbot(service: Any, name: str, kb: Optional[str], system: Optional[str]) -> Any:
    from ..server.runtime import check_kb, kb_location
    from ..store.chat import ChatStoreError

    if kb is not None:
        check_kb(kb)
        bot = service.ensure_chatbot(name, kb_path=kb_location(kb))
    else:
        try:
            bot = service.get_chatbot(name)
        except ChatStoreError:
            raise fail(f"no chatbot {name!r} yet: start with --kb FILE (a knowledge base "
                       "made by `agentmodes ingest`)") from None
    if system is not None:
        bot = service.update_chatbot(name, settings={"system_prompt": system})
    return bot


def _conversation(service: Any, chatbot: str, continue_last: bool,
                  conversation: Optional[str]) -> Optional[str]:
    if conversation:
        conv = service.get_conversation(conversation)
        if conv.chatbot != chatbot:
            raise fail(f"conversation {conversation!r} belongs to chatbot {conv.chatbot!r}")
        return conv.id
    if continue_last:
        last = service.list_conversations(chatbot, limit=1)
        if not last:
            raise fail(f"chatbot {chatbot!r} has no conversation to continue yet", 1)
        return last[0].id
    return None


class ChatSession:
    """One terminal conversation: each question through the service, shown like `ask`."""

    def __init__(self, service: Any, chatbot: str, conversation_id: Optional[str],
                 mode: Optional[str], as_json: bool) -> None:
        self.service, self.chatbot, self.mode, self.as_json = service, chatbot, mode, as_json
        self.conversation_id = conversation_id
        self.failures = 0
        if conversation_id and not as_json:
            self._replay()

    def _replay(self) -> None:
        """The conversation so far, on stderr, so `-c` shows where it left off."""
        if output.quiet():
            return
        for message in self.service.messages(self.conversation_id)[-6:]:
            who = "you" if message.role == "user" else self.chatbot
            typer.echo(f"{who}> {message.content}", err=True)

    def loop(self, lines: Any) -> None:
        for line in lines:
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            if text == "/new":
                self.conversation_id = None
                if not output.quiet():
                    typer.echo("(new conversation)", err=True)
                continue
            self.ask(text)

    def ask(self, question: str) -> None:
        """One question; a failed run is shown (and counted) and the chat goes on."""
        view = None if self.as_json else TraceView(quiet=output.quiet())
        for event in self.service.stream(self.chatbot, question, mode=self.mode,
                                         conversation_id=self.conversation_id):
            self.conversation_id = event.get("conversation_id") or self.conversation_id
            if event.get("fatal") and view is not None:    # shown under --quiet too
                self.failures += 1
                typer.echo(f"agentmodes: error: {event.get('message')}", err=True)
                continue
            self.failures += bool(event.get("fatal"))
            if view is None:
                output.emit_event(event)
            else:
                view.show([event])
        if view is not None:
            typer.echo()


def _lines(history_file: Optional[Path]) -> Any:
    """Questions: typed at a prompt (with readline history) or read from a pipe."""
    if not sys.stdin.isatty():
        yield from sys.stdin
        return
    try:
        import readline
    except ImportError:          # pragma: no cover - Windows without pyreadline
        readline = None
    if readline is not None and history_file is not None:
        try:
            readline.read_history_file(history_file)
        except OSError:
            pass
    typer.echo("Ask a question; /new starts a new conversation, /exit or Ctrl-D ends.",
               err=True)
    try:
        while True:
            try:
                yield input("> ")
            except EOFError:
                typer.echo(err=True)
                return
    finally:
        if readline is not None and history_file is not None:
            try:
                readline.write_history_file(history_file)
            except OSError:
                pass
