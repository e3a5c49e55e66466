"""What every command prints, done one way for all of them.

- `--json`: JSON Lines on stdout, one object per line, each with a "type" saying what it
  is ("hit", "document", "file", "summary", an event's status, "delta", "done", "result"),
  so `agentmodes ... --json | jq 'select(.type == "done")'` works for every command and a
  long run can be read line by line while it is still going (each line is flushed).
- `--quiet` / `-q` (before or after the command name): no progress bars, trace or summary
  on stderr; the results on stdout and the error lines stay.
- `-` in place of a question or query reads it from stdin; after a question, `-` adds
  stdin as context (`cat notes.md | agentmodes ask "..." -`).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Mapping, Optional

import typer

QUIET_OPTION = typer.Option(False, "--quiet", "-q",
                            help="No progress, trace or summary on stderr; only results "
                                 "(stdout) and errors.")
JSON_HELP = "Print JSON Lines on stdout: one object per line, each with a \"type\"."
STDIN = "-"

_state = {"quiet": False}


def set_quiet(on: bool) -> None:
    """A command's own -q adds to the global one; neither can switch the other off."""
    _state["quiet"] = _state["quiet"] or bool(on)


def quiet(local: bool = False) -> bool:
    return _state["quiet"] or bool(local)


def record(kind: str, payload: Optional[Mapping[str, Any]] = None, **fields: Any) -> dict:
    """The JSON Lines shape: "type" first, then the fields ("type" is reserved)."""
    out: dict[str, Any] = {"type": kind}
    for source in (payload or {}), fields:
        out.update((k, v) for k, v in source.items() if k != "type")
    return out


def emit(kind: str, payload: Optional[Mapping[str, Any]] = None, **fields: Any) -> None:
    """Write one JSON line on stdout and flush it (a reader sees it at once)."""
    line = json.dumps(record(kind, payload, **fields), ensure_ascii=False, default=str)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def event_type(event: Mapping[str, Any]) -> str:
    """An agent event's type: its seed status, "delta" for answer tokens, "done" last."""
    if event.get("done"):
        return "done"
    return str(event.get("status") or ("delta" if "delta" in event else "event"))


def emit_event(event: Mapping[str, Any]) -> None:
    emit(event_type(event), event)


def read_stdin(what: str) -> str:
    """All of stdin as text; a terminal or an empty pipe is a usage error, not a hang."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        raise typer.BadParameter(f"'-' reads {what} from stdin, but nothing is piped in "
                                 f"(e.g. echo \"...\" | agentmodes ...)")
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    if isinstance(data, bytes):
        from ..knowledge.extract import UnreadableFile, decode_text
        try:
            data = decode_text(data)            # any encoding, as files are read
        except UnreadableFile as err:
            raise typer.BadParameter(f"stdin is not text: {err}") from None
    if not data.strip():
        raise typer.BadParameter(f"'-' reads {what} from stdin, but stdin was empty")
    return data


def argument_or_stdin(value: str, what: str) -> str:
    """The argument itself, or stdin's text when the argument is `-`."""
    return read_stdin(what).strip() if value == STDIN else value
