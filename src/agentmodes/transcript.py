"""A conversation as a file a person keeps: Markdown to read, JSON to process.

Both carry the questions, the answers with the sources they cite, and each answer's mode
and status; the JSON adds every stored field (trace, usage, timings), so an export can be
analysed or replayed without the server.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import PurePath

from .store.chat import Conversation, StoredMessage


def to_json(conv: Conversation, messages: list[StoredMessage]) -> str:
    return json.dumps({"conversation": asdict(conv), "messages": [asdict(m) for m in messages]},
                      ensure_ascii=False, indent=2)


def to_markdown(conv: Conversation, messages: list[StoredMessage]) -> str:
    lines = [f"# {conv.title or 'Conversation'}", "",
             f"Chatbot: {conv.chatbot} · started {conv.created_at or '?'}", ""]
    for m in messages:
        if m.role == "user":
            lines += ["## Question", "", m.content.strip(), ""]
            continue
        status = "" if m.status == "complete" else f" ({m.status})"
        lines += [f"## Answer{status}", "", (m.content or m.error or "").strip(), ""]
        cited = [s for s in (m.sources or []) if s.get("cited", True)]
        if cited:
            lines += ["Sources:", ""]
            for pos, src in enumerate(cited, 1):
                n = src.get("index") or pos
                # A file is named, not located: the server's directories are not the reader's.
                where = src.get("url") or PurePath(src.get("source") or "").name
                lines.append(f"[{n}] {src.get('title') or where}" + (f" ({where})" if where else ""))
            lines.append("")
        if m.mode:
            lines += [f"_Mode: {m.mode}_", ""]
    return "\n".join(lines).rstrip() + "\n"


def filename(conv: Conversation, fmt: str) -> str:
    """A file name from the title: ASCII letters, digits and dashes."""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", conv.title or "").strip("-")[:60] or "conversation"
    return f"{stem}-{conv.id[:8]}.{fmt}"
