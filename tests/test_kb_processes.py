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
    from agentmodes.knowledge import ingest
    from agentmodes.knowledge.base import KnowledgeBase

    pause_phase, pause_at = sys.argv[3], int(sys.argv[4])

    def progress(phase, done, total, label):
        print(phase, done, total, flush=True)
        if phase == pause_phase and done >= pause_at:
            time.sleep(60)

    ingest.BATCH_FILES = 5  # several batches of a few files each
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
        # files are committed in batches and counted once committed: at least the 20
        # reported, never all of them, each complete
        assert 20 <= stored < 60
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


# Pauses INSIDE the write transaction of a batch, right after the 11th document's rows were
# written: the batch's earlier documents are written too, but none of it is committed.
PAUSE_IN_TRANSACTION = textwrap.dedent("""
    import sys, time
    from kb_fixtures import HashingEmbedder
    from agentmodes.knowledge import ingest
    from agentmodes.knowledge.base import KnowledgeBase
    from agentmodes.knowledge.backends.sqlite import SQLiteBackend as Store

    original_replace, original_batch = Store.replace_document, Store.batch
    state = {"docs": 0, "committed": 0}

    def replace_document(self, *args, **kwargs):
        status = original_replace(self, *args, **kwargs)
        state["docs"] += 1
        if state["docs"] == 11:
            print("in-transaction", state["committed"], flush=True)
            time.sleep(60)
        return status

    def batch(self):
        class Batch:
            def __enter__(inner):
                inner.writes = original_batch(self)
                return inner.writes.__enter__()
            def __exit__(inner, *exc):
                done = inner.writes.__exit__(*exc)
                state["committed"] = state["docs"]
                return done
        return Batch()

    ingest.BATCH_FILES = 4
    Store.replace_document, Store.batch = replace_document, batch
    KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()).ingest(sys.argv[2])
""")


def test_killed_inside_a_write_transaction_keeps_only_committed_documents(tmp_path):
    folder = _many_files(tmp_path / "docs", 30)
    db = tmp_path / "kb.db"
    process = _spawn(PAUSE_IN_TRANSACTION, str(db), str(folder))
    line = process.stdout.readline().split()
    assert line[0] == "in-transaction", process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    committed = int(line[1])
    assert committed <= 10  # the 11th document's batch is still open

    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.check() == []
        # exactly the committed batches: the open batch's documents (11th included) are gone
        assert kb.stats()["documents"] == committed and kb.stats()["chunks"] == 2 * committed
        report = kb.ingest(folder)
        assert len(report.added) == 30 - committed and len(report.unchanged) == committed
        assert len(kb.search("subject number 10", mode="lexical", k=30)) > 0


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
