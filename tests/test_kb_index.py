"""The SQLite KB's saved search index: survives restarts and kills, follows other processes,
forgets removed documents, and takes over KBs written before it existed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from kb_fixtures import HashingEmbedder, make_corpus, numbered_reports

from agentmodes.knowledge.backends import index_files
from agentmodes.knowledge.base import KnowledgeBase

TESTS = Path(__file__).parent


def _spawn(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


# Opens the KB in a new process and reports what it had to analyse to answer.
COUNT_ANALYSIS = """
    import json, sys
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge.analysis import Analyzer
    from agentmodes.knowledge.base import KnowledgeBase

    texts = []
    original = Analyzer.analyse_keys
    Analyzer.analyse_keys = lambda self, text, *a, **k: (texts.append(text),
                                                         original(self, text, *a, **k))[1]
    with KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()) as kb:
        hits = {m: [h.title for h in kb.search(sys.argv[2], mode=m, k=2)]
                for m in ("lexical", "semantic", "hybrid")}
    print(json.dumps({"analysed": texts, "hits": hits}))
"""


def _search_elsewhere(db: Path, query: str) -> dict:
    process = _spawn(COUNT_ANALYSIS, str(db), query)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out)


def test_a_new_process_opens_the_saved_index_without_analysing_anything(tmp_path):
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(make_corpus(tmp_path / "docs"))
    assert (tmp_path / "kb.db.index" / "manifest.json").is_file()
    result = _search_elsewhere(db, "volcano eruption lava")
    assert result["analysed"] == ["volcano eruption lava"] * 3  # the queries, nothing else
    assert all(hits[0] == "Volcano Guide" for hits in result["hits"].values())


def test_removing_a_document_removes_it_from_both_indexes_and_stays_removed(tmp_path):
    folder = numbered_reports(tmp_path / "docs", 12)
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        assert kb.search("zq004x", mode="lexical", k=1)[0].title == "Report 4"
        (folder / "doc004.md").unlink()
        assert kb.ingest(folder).removed == [str(folder / "doc004.md")]
        for mode in ("lexical", "semantic", "hybrid"):
            assert "Report 4" not in [h.title for h in kb.search("zq004x report 4", mode, k=12)]
    result = _search_elsewhere(db, "zq004x report 4")
    assert all("Report 4" not in hits for hits in result["hits"].values())
    assert result["analysed"] == ["zq004x report 4"] * 3


def test_removing_most_documents_compacts_the_index(tmp_path):
    folder = numbered_reports(tmp_path / "docs", 120)
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        for path in sorted(folder.iterdir())[:90]:
            path.unlink()
        kb.ingest(folder)
    manifest = index_files.read_manifest(tmp_path / "kb.db.index")
    assert manifest["rows"] == 30 and manifest["dead_count"] == 0  # rewritten, dead rows gone
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.search("zq100x", mode="hybrid", k=1)[0].title == "Report 100"
        assert kb.search("zq010x", mode="lexical", k=5) == []


# Ingests with an index save after every file; pauses inside the save just before its
# manifest is switched, so the parent's SIGKILL lands while index files are half written.
KILL_IN_SAVE = """
    import sys, time
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge import ingest
    from agentmodes.knowledge.backends import index_files, sqlite_index
    from agentmodes.knowledge.base import KnowledgeBase

    sqlite_index.SAVE_EVERY_S = 0.0
    ingest.BATCH_FILES = 1  # a save between files, as when each file was its own transaction
    saves = {"n": 0}
    original = index_files.write_manifest

    def write_manifest(folder, manifest):
        saves["n"] += 1
        if saves["n"] == 4:
            print("in-save", flush=True)
            time.sleep(60)
        original(folder, manifest)

    index_files.write_manifest = write_manifest
    KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()).ingest(sys.argv[2])
    print("finished", flush=True)
"""


def test_killed_while_saving_the_index_leaves_it_usable_and_it_catches_up(tmp_path):
    folder = numbered_reports(tmp_path / "docs", 40)
    db = tmp_path / "kb.db"
    process = _spawn(KILL_IN_SAVE, str(db), str(folder))
    assert process.stdout.readline().strip() == "in-save"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.check() == []
        stored = kb.stats()["documents"]
        assert 0 < stored < 40
        titles = {h.title for h in kb.search("report code word", mode="lexical", k=50)}
        assert titles == {f"Report {i}" for i in range(stored)}  # every stored document
        kb.ingest(folder)
        assert kb.search("zq039x", mode="hybrid", k=1)[0].title == "Report 39"
    manifest = index_files.read_manifest(tmp_path / "kb.db.index")
    assert manifest["rows"] == 40
    leftovers = {p.name for p in (tmp_path / "kb.db.index").iterdir()}
    assert leftovers <= set(manifest["files"].values()) | {s[0] for s in manifest["segments"]} \
        | {"manifest.json", "lock"}


# Ingests one file at a time with a pause between, printing each file it has stored.
SLOW_WRITER = """
    import sys, time
    from pathlib import Path
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge.base import KnowledgeBase

    with KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()) as kb:
        for path in sorted(Path(sys.argv[2]).iterdir()):
            kb.ingest(path)
            print(path.stem, flush=True)
            time.sleep(0.3)
    print("done", flush=True)
"""


def test_one_process_ingests_while_another_searches_and_finds_the_new_documents(tmp_path):
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(numbered_reports(tmp_path / "first", 3))
        assert kb.search("zq001x", mode="hybrid", k=1)[0].title == "Report 1"
        writer = _spawn(SLOW_WRITER, str(db), str(numbered_reports(tmp_path / "more", 5, start=50)))
        try:
            seen = set()
            for line in writer.stdout:
                if line.strip() == "done":
                    break
                number = int(line.strip()[3:])
                hits = kb.search(f"zq{number:03}x", mode="lexical", k=1)
                assert hits and hits[0].title == f"Report {number}"  # already visible here
                hybrid = kb.search(f"zq{number:03}x report {number}", mode="hybrid", k=3)
                assert f"Report {number}" in [h.title for h in hybrid]
                seen.add(number)
        finally:
            writer.wait(timeout=60)
        assert seen == {50, 51, 52, 53, 54} and writer.returncode == 0
        assert kb.stats()["documents"] == 8


def _write_schema_1_kb(path: Path, embedder: HashingEmbedder) -> None:
    """A KB as agentmodes wrote it before saved indexes (schema 1, commit c633232)."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE documents (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
            root TEXT NOT NULL, title TEXT NOT NULL, content_hash TEXT NOT NULL,
            mtime REAL NOT NULL, size INTEGER NOT NULL,
            ingested_at TEXT NOT NULL DEFAULT (datetime('now')));
        CREATE INDEX documents_root ON documents(root);
        CREATE TABLE chunks (id INTEGER PRIMARY KEY,
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            position INTEGER NOT NULL, title TEXT NOT NULL, heading_path TEXT NOT NULL,
            text TEXT NOT NULL, text_hash TEXT NOT NULL, UNIQUE (doc_id, position));
        CREATE INDEX chunks_text_hash ON chunks(text_hash);
        CREATE TABLE embeddings (embedder TEXT NOT NULL, text_hash TEXT NOT NULL,
            vector BLOB NOT NULL, PRIMARY KEY (embedder, text_hash)) WITHOUT ROWID;
    """)
    meta = {"app": "agentmodes-kb", "schema_version": "1", "revision": "3",
            "embedder": embedder.name, "embedder_dim": str(embedder.dim),
            "chunk_size": "1200", "chunk_overlap": "150"}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    from agentmodes.knowledge.chunking import Chunk

    for doc_id, (name, body) in enumerate([("ferries", "Ferries leave the harbour hourly."),
                                           ("castle", "The castle gate opens at ten.")], 1):
        conn.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?, 0, 10, datetime('now'))",
                     (doc_id, f"/docs/{name}.md", "/docs", name, f"hash{doc_id}"))
        chunk = Chunk(0, name, [], body)
        conn.execute("INSERT INTO chunks VALUES (?, ?, 0, ?, '[]', ?, ?)",
                     (doc_id, doc_id, name, body, chunk.text_hash))
        vector = embedder.embed_passages([chunk.index_text])[0].astype(np.float32)
        conn.execute("INSERT INTO embeddings VALUES (?, ?, ?)",
                     (embedder.name, chunk.text_hash, vector.tobytes()))
    conn.commit()
    conn.close()


def test_a_kb_written_before_saved_indexes_is_upgraded_on_open(tmp_path):
    db = tmp_path / "old.db"
    _write_schema_1_kb(db, HashingEmbedder())
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.search("castle gate", mode="hybrid", k=1)[0].title == "castle"
        assert kb.search("harbour", mode="semantic", k=1)[0].title == "ferries"
        assert kb.check() == [] and kb.stats()["pending_embeddings"] == 0
        notes = numbered_reports(tmp_path / "docs", 2)
        kb.ingest(notes)
        assert kb.search("zq001x", mode="lexical", k=1)[0].title == "Report 1"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone() == (4,)
    conn.close()
    result = _search_elsewhere(db, "castle gate")
    assert result["analysed"] == ["castle gate"] * 3 and result["hits"]["hybrid"][0] == "castle"


def test_a_damaged_or_foreign_index_is_rebuilt_from_the_file(tmp_path):
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(make_corpus(tmp_path / "docs"))
    folder = tmp_path / "kb.db.index"
    manifest = index_files.read_manifest(folder)
    for name, _, _ in manifest["segments"]:
        for part in (folder / name).iterdir():
            part.unlink()
        (folder / name).rmdir()
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.search("chlorophyll", mode="hybrid", k=1)[0].title == "Plant Biology"
    assert index_files.read_manifest(folder)["generation"] > manifest["generation"]
    # an index beside a different KB file (copied over it) is never used
    other = tmp_path / "other.db"
    with KnowledgeBase.open(other, embedder=HashingEmbedder()) as kb:
        kb.ingest(numbered_reports(tmp_path / "reports", 2))
    (folder / "manifest.json").write_text(
        (tmp_path / "other.db.index" / "manifest.json").read_text())
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.search("zq001x", mode="lexical", k=3) == []
        assert kb.search("volcano", mode="lexical", k=1)[0].title == "Volcano Guide"


def test_reindexing_with_another_embedder_replaces_the_saved_vectors(tmp_path):
    db = tmp_path / "kb.db"
    corpus = make_corpus(tmp_path / "docs")
    wide = HashingEmbedder(name="test:hashing-32", dim=32)

    def semantic(kb):
        return [(h.title, round(h.score, 5)) for h in kb.search("ferry midnight light",
                                                                mode="semantic", k=4)]

    with KnowledgeBase.open(tmp_path / "fresh.db", embedder=wide) as kb:
        kb.ingest(corpus)
        expected = semantic(kb)
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(corpus)
        assert semantic(kb) != expected
    with KnowledgeBase.open(db, embedder=wide, reindex=True) as kb:
        kb.ingest(corpus, force=True)
        assert semantic(kb) == expected
    manifest = index_files.read_manifest(tmp_path / "kb.db.index")
    assert manifest["space"] == "test:hashing-32" and manifest["dim"] == 32
    with KnowledgeBase.open(db, embedder=wide) as kb:
        assert semantic(kb) == expected


def test_large_kbs_search_an_approximate_graph_that_follows_changes(tmp_path, monkeypatch):
    from agentmodes.knowledge.backends import index_save

    monkeypatch.setattr(index_save, "ANN_MIN", 20)  # the graph from 20 vectors on
    folder = numbered_reports(tmp_path / "docs", 40)
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        exact = [h.title for h in kb.search("zq017x report 17 topic 51", "semantic", k=5)]
    manifest = index_files.read_manifest(tmp_path / "kb.db.index")
    assert manifest["graphs"] and manifest["graphs"][0][0].endswith(".usearch")
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb._index.searcher().dense.ann is not None
        assert [h.title for h in kb.search("zq017x report 17 topic 51", "semantic", k=5)] \
            == exact
        numbered_reports(folder, 1, start=77)  # one more: listed as uncovered, scored exactly
        kb.ingest(folder)
        assert kb.search("zq077x report 77 topic 231", "hybrid", k=1)[0].title == "Report 77"
    after = index_files.read_manifest(tmp_path / "kb.db.index")
    assert after["graphs"] == manifest["graphs"]  # the graph was not rewritten
    assert after["files"].get("ann_uncovered")
    result = _search_elsewhere(db, "zq077x report 77 topic 231")
    assert result["hits"]["hybrid"][0] == "Report 77" and result["hits"]["lexical"][0] == \
        "Report 77"
