"""`agentmodes docs list|show|rm` and `agentmodes chat` as a user runs them: real
subprocesses, a real KB file and chat database, scripted replies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb_fixtures import examples_kb
SEARCH = 'THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")'


def cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "AGENTMODES_KB": ""}
    for name in ("AGENTMODES_DEBUG", "AGENTMODES_CHAT_DB", "AGENTMODES_LLM"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "agentmodes", *args], input=stdin or "",
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


@pytest.fixture
def kb(tmp_path):
    return examples_kb(tmp_path / "kb.db")


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_docs_list_show_rm(tmp_path, kb):
    listed = lines(cli(tmp_path, "docs", "list", "--kb", str(kb), "--json").stdout)
    assert {d["type"] for d in listed} == {"document"} and len(listed) == 6
    faq = next(d for d in listed if d["name"] == "faq.md")

    shown = cli(tmp_path, "docs", "show", "faq.md", "--kb", str(kb))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"# {faq['title']}") and "Mo-Fr 9-18 Uhr" in shown.stdout
    as_json = lines(cli(tmp_path, "docs", "show", str(faq["id"]), "--kb", str(kb),
                        "--json").stdout)
    assert as_json[0]["type"] == "document" and len(as_json) == faq["chunks"] + 1
    assert [p["position"] for p in as_json[1:]] == list(range(faq["chunks"]))

    missing = cli(tmp_path, "docs", "rm", "faq.md", "nope.md", "--kb", str(kb))
    assert missing.returncode == 1 and "no document 'nope.md'" in missing.stderr
    assert len(lines(cli(tmp_path, "docs", "list", "--kb", str(kb), "--json").stdout)) == 6

    removed = cli(tmp_path, "docs", "rm", "faq.md", "--kb", str(kb))
    assert removed.returncode == 0 and "removed" in removed.stderr
    left = lines(cli(tmp_path, "docs", "list", "--kb", str(kb), "--json").stdout)
    assert "faq.md" not in {d["name"] for d in left} and len(left) == 5
    found = cli(tmp_path, "search", "Wie schnell antworten Sie", "--kb", str(kb), "--mode",
                "lexical", "--json")
    assert "faq.md" not in found.stdout                   # its chunks are gone too


def test_chat_keeps_the_conversation_and_continues_it(tmp_path, kb):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([SEARCH, "THOUGHT: found\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"]),
                       encoding="utf-8")
    first = cli(tmp_path, "chat", "--kb", str(kb), "--llm", "scripted:replies.json",
                "--mode", "react", "--json", stdin="Wann hat die Agentur geöffnet?\n")
    assert first.returncode == 0, first.stderr
    done = [e for e in lines(first.stdout) if e["type"] == "done"]
    assert len(done) == 1 and done[0]["full_response"].startswith("Mo-Fr 9-18 Uhr")
    conversation = done[0]["conversation_id"]

    db = tmp_path / "xdg" / "agentmodes" / "chat.db"
    assert db.is_file()
    # -c continues it: the follow-up lands in the same stored conversation (whose recent
    # turns the service hands to the agent as history).
    again = cli(tmp_path, "chat", "-c", "--llm", "scripted:replies.json", "--mode", "react",
                "--json", stdin="Und am Samstag?\n")
    assert again.returncode == 0, again.stderr
    done = [e for e in lines(again.stdout) if e["type"] == "done"]
    assert done[0]["conversation_id"] == conversation
    from agentmodes.store.chat import ChatStore

    store = ChatStore.open(str(db))
    try:
        rows = [(m.role, m.content) for m in store.list_messages(conversation)]
    finally:
        store.close()
    assert [r[0] for r in rows] == ["user", "assistant", "user", "assistant"]
    assert rows[2][1] == "Und am Samstag?"

    shown = cli(tmp_path, "chat", "-c", "--llm", "scripted:replies.json", stdin="/exit\n")
    assert shown.returncode == 0 and "you> Und am Samstag?" in shown.stderr


def test_chat_without_a_kb_or_history_says_what_to_do(tmp_path):
    none = cli(tmp_path, "chat", "--llm", "scripted:x.json", stdin="hi\n")
    assert none.returncode != 0 and len(none.stderr.strip().splitlines()) == 1
    assert "agentmodes: error:" in none.stderr
