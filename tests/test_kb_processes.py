"""The KB across real processes: killed mid-ingest, and reopened by another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from kb_fixtures import HashingEmbedder, make_corpus

from agentmodes.knowledge.base import KnowledgeBase

TESTS = Path(__file__).parent

# Ingests a folder, printing progress; from the given (phase, count) on it pauses, so the
# parent's SIGKILL lands in the middle of the work however loaded the machine is.
SLOW_INGEST = textwrap.dedent("""
    import sys, time
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge.base import KnowledgeBase

    pause_phase, pause_at = sys.argv[3], int(sys.argv[4])

    def progress(phase, done, total, label):
        print(phase, done, total, flush=True)
        if phase == pause_phase and done >= pause_at:
            time.sleep(60)

    kb = KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder())
    kb.ingest(sys.argv[2], progress=progress)
    print("finished", flush=True)
""")


def _spawn(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _many_files(folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        (folder / f"doc{i:03}.md").write_text(
            f"# Document {i}\n\nParagraph about subject number {i}, a topic of its own.\n\n"
            f"## Details\n\nMore words for document {i}: alpha beta gamma {i * 7}.\n",
            encoding="utf-8")
    return folder


def _kill_when(process: subprocess.Popen, phase: str, at_least: int) -> None:
    for line in process.stdout:
        parts = line.split()
        if parts and parts[0] == phase and (len(parts) == 1 or int(parts[1]) >= at_least):
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, "the ingest finished before it was killed"


def test_killed_while_reading_files_leaves_a_consistent_kb_that_resumes(tmp_path):
    folder = _many_files(tmp_path / "docs", 60)
    db = tmp_path / "kb.db"
    _kill_when(_spawn(SLOW_INGEST, str(db), str(folder), "read", "20"), "read", 20)

    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.check() == []
        stored = kb.stats()["documents"]
        assert stored == 20  # the files before the pause, each complete
        assert kb.stats()["chunks"] == 2 * stored  # every stored document is complete
        report = kb.ingest(folder)
        assert len(report.unchanged) == stored and len(report.added) == 60 - stored
        assert kb.stats()["pending_embeddings"] == 0 and kb.check() == []


def test_killed_while_embedding_keeps_finished_batches(tmp_path):
    folder = _many_files(tmp_path / "docs", 60)  # 120 chunks -> 4 batches of 32
    db = tmp_path / "kb.db"
    _kill_when(_spawn(SLOW_INGEST, str(db), str(folder), "embed", "32"), "embed", 32)

    embedder = HashingEmbedder()
    with KnowledgeBase.open(db, embedder=embedder) as kb:
        assert kb.check() == []
        stats = kb.stats()
        assert stats["documents"] == 60 and stats["chunks"] == 120
        assert stats["pending_embeddings"] == 120 - 32  # the first batch survived the kill
        pending = stats["pending_embeddings"]
        report = kb.ingest(folder)
        assert len(report.unchanged) == 60
        assert report.embedded == len(embedder.passages) == pending  # finished batches kept
        assert kb.stats()["pending_embeddings"] == 0


# Pauses INSIDE the write transaction of the 11th document: its row is inserted, its chunks
# are being written (the chunk hashes are computed in the middle of that statement list).
PAUSE_IN_TRANSACTION = textwrap.dedent("""
    import sys, time
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge import chunking
    from agentmodes.knowledge.base import KnowledgeBase
    from agentmodes.knowledge.backends.sqlite import SQLiteBackend as Store

    original_hash = chunking.Chunk.text_hash
    original_replace = Store.replace_document
    state = {"docs": 0, "writing": False}

    def replace_document(self, *args, **kwargs):
        state["docs"] += 1
        state["writing"] = True
        try:
            return original_replace(self, *args, **kwargs)
        finally:
            state["writing"] = False

    def text_hash(chunk):
        if state["writing"] and state["docs"] == 11:
            print("in-transaction", flush=True)
            time.sleep(60)
        return original_hash.fget(chunk)

    Store.replace_document = replace_document
    chunking.Chunk.text_hash = property(text_hash)
    KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()).ingest(sys.argv[2])
""")


def test_killed_inside_a_write_transaction_keeps_only_committed_documents(tmp_path):
    folder = _many_files(tmp_path / "docs", 30)
    db = tmp_path / "kb.db"
    _kill_when(_spawn(PAUSE_IN_TRANSACTION, str(db), str(folder)), "in-transaction", 0)

    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.check() == []
        assert kb.stats()["documents"] == 10 and kb.stats()["chunks"] == 20
        assert len(kb.search("subject number 10", mode="lexical", k=30)) > 0
        report = kb.ingest(folder)
        assert len(report.added) == 20 and len(report.unchanged) == 10


SEARCH_IN_NEW_PROCESS = textwrap.dedent("""
    import json, sys
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge.base import KnowledgeBase

    with KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()) as kb:
        out = {mode: [(h.title, h.heading_path, h.source) for h in kb.search(sys.argv[2], mode=mode, k=1)]
               for mode in ("lexical", "semantic", "hybrid")}
        out["stats"] = kb.stats()
    print(json.dumps(out))
""")


def test_a_second_process_finds_what_the_first_ingested(tmp_path):
    import json

    corpus = make_corpus(tmp_path / "docs")
    db = tmp_path / "kb.db"
    ingest = _spawn("import sys\nfrom kb_fixtures import HashingEmbedder\n"
                    "from agentmodes.knowledge.base import KnowledgeBase\n"
                    "KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder())"
                    ".ingest(sys.argv[2]).added and print('ok')", str(db), str(corpus))
    out, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0 and out.strip() == "ok", err

    search = _spawn(SEARCH_IN_NEW_PROCESS, str(db), "lava eruption from the vent")
    out, err = search.communicate(timeout=120)
    assert search.returncode == 0, err
    result = json.loads(out)
    for mode in ("lexical", "semantic", "hybrid"):
        title, heading_path, source = result[mode][0]
        assert (title, heading_path) == ("Volcano Guide", ["Volcanoes", "Eruptions"]), mode
        assert source == str(corpus / "volcano.html")
    assert result["stats"]["documents"] == 4 and result["stats"]["pending_embeddings"] == 0
