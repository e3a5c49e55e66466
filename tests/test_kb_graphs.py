"""Approximate graphs of large KBs as delta segments (knowledge/ann.py, backends/index_save.py).

The thresholds are lowered so a few dozen documents behave like a KB of millions of chunks:
a graph from ANN_MIN vectors, a new graph once more than UNCOVERED_MAX rows are in none, the
two smallest merged above MAX_GRAPHS.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kb_fixtures import HashingEmbedder, numbered_reports
from search_fakes import RecordingGraph

from agentmodes.knowledge import ann
from agentmodes.knowledge.backends import index_files, index_save
from agentmodes.knowledge.base import KnowledgeBase

TESTS = Path(__file__).parent
QUERY = "zq{0:03}x report {0} topic {1}"


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    monkeypatch.setattr(index_save, "ANN_MIN", 20)
    monkeypatch.setattr(index_save, "UNCOVERED_MAX", 3)
    monkeypatch.setattr(index_save, "MAX_GRAPHS", 2)


def _graphs(db: Path) -> list[list]:
    return index_files.read_manifest(Path(f"{db}.index"))["graphs"]


def _first_semantic(kb: KnowledgeBase, i: int) -> str:
    return kb.search(QUERY.format(i, i * 3), mode="semantic", k=1)[0].title


def test_added_vectors_get_a_graph_of_their_own_and_the_smallest_merge(tmp_path):
    folder, db = numbered_reports(tmp_path / "docs", 30), tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        first = _graphs(db)
        assert len(first) == 1 and first[0][1] == 30
        first_file = Path(f"{db}.index") / first[0][0]
        written = first_file.stat().st_mtime_ns
        kb.ingest(numbered_reports(folder, 2, start=30))  # 2 <= UNCOVERED_MAX: scored exactly
        assert _graphs(db) == first
        assert _first_semantic(kb, 31) == "Report 31"
        # now 5 rows in no graph: a graph of their own
        kb.ingest(numbered_reports(folder, 3, start=32))
        second = _graphs(db)
        assert second[0] == first[0] and [g[1] for g in second] == [30, 5]
        assert first_file.stat().st_mtime_ns == written  # the big graph was not rewritten
        kb.ingest(numbered_reports(folder, 4, start=35))  # a third graph: the two smallest merge
        third = _graphs(db)
        assert sorted(g[1] for g in third) == [9, 30] and third[0] == first[0]
        assert first_file.stat().st_mtime_ns == written
        assert {p.name for p in Path(f"{db}.index").glob("*.usearch")} == \
            {name for name, _ in third}  # the merged-away graphs were deleted
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:  # a restart
        assert len(kb._index.searcher().dense.ann.graphs) == 2
        for i in (3, 31, 33, 37):
            assert _first_semantic(kb, i) == f"Report {i}"
    found = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from kb_fixtures import HashingEmbedder, numbered_reports
        from agentmodes.knowledge.base import KnowledgeBase
        with KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder()) as kb:
            print(kb.search("zq038x report 38 topic 114", mode="hybrid", k=1)[0].title)
    """), str(db)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(TESTS)})
    assert found.stdout.strip() == "Report 38", found.stderr  # a second process sees them


def test_removed_rows_leave_the_graphs_when_the_rows_are_compacted(tmp_path):
    folder, db = numbered_reports(tmp_path / "docs", 120), tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        for path in sorted(folder.iterdir())[:40]:
            path.unlink()
        kb.ingest(folder)  # 40 of 120 dead: compacted, the graph rebuilt over the 80 left
        assert [g[1] for g in _graphs(db)] == [80]
        assert _first_semantic(kb, 60) == "Report 60"
        titles = {h.title for h in kb.search("report code word", mode="semantic", k=120)}
        assert titles == {f"Report {i}" for i in range(40, 120)}


# Ingests file by file with an index save after each (SAVE_EVERY_S = 0): saves inside an
# ingest list new vectors as uncovered instead of building graphs. Stops after 12 files.
KILLED_INGEST = """
    import sys, time
    from pathlib import Path
    from kb_fixtures import HashingEmbedder, numbered_reports
    from agentmodes.knowledge.backends import index_save, sqlite_index
    from agentmodes.knowledge.base import KnowledgeBase

    index_save.ANN_MIN, index_save.UNCOVERED_MAX, index_save.MAX_GRAPHS = 20, 3, 2
    sqlite_index.SAVE_EVERY_S = 0.0

    def progress(phase, done, total, label):
        if phase == "embed" and done >= 12:
            print("embedded", flush=True)
            time.sleep(60)

    kb = KnowledgeBase.open(sys.argv[1], embedder=HashingEmbedder())
    kb.embed_pending(progress=progress, batch_size=1)
"""


def test_a_kill_in_a_long_embedding_keeps_what_was_saved_and_the_next_ingest_builds(tmp_path):
    folder, db = numbered_reports(tmp_path / "docs", 30), tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)  # 30 vectors, one graph
        kb.ingest(numbered_reports(folder, 16, start=30), embed=False)
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_INGEST),
                                str(db)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(TESTS)})
    assert process.stdout.readline().strip() == "embedded"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    manifest = index_files.read_manifest(Path(f"{db}.index"))
    assert [g[1] for g in manifest["graphs"]] == [30]  # no graph built mid-ingest ...
    uncovered = Path(f"{db}.index") / manifest["files"]["ann_uncovered"]
    assert uncovered.is_file()  # ... the new vectors saved as rows in no graph
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert kb.check() == []
        assert kb.stats()["pending_embeddings"] == 4
        assert _first_semantic(kb, 41) == "Report 41"  # embedded before the kill: found
        report = kb.ingest(folder)  # the rest is embedded; the final save builds a graph
        assert report.embedded == 4
        assert sorted(g[1] for g in _graphs(db)) == [16, 30]
        assert _first_semantic(kb, 45) == "Report 45"


def test_a_graph_set_asks_each_graph_for_a_share_of_the_candidates():
    big, small = RecordingGraph(9_000), RecordingGraph(1_000)
    rows = ann.GraphSet([big, small]).search(None, 256)
    assert big.asked == [(256, ann.EXPANSION_SEARCH)] and small.asked == [(52, ann.EXPANSION_SEARCH)]
    assert len(rows) == 308
    ann.GraphSet([big]).search(None, 128, expansion=128)  # hybrid's feedback search
    assert big.asked[-1] == (128, 128)


def _half_copy(db: Path) -> tuple[dict, "np.ndarray", "np.ndarray"]:
    """(manifest, float16 copy, float32 vectors) of a saved index."""
    import numpy as np

    folder = Path(f"{db}.index")
    manifest = index_files.read_manifest(folder)
    names, dim, rows = manifest["files"], manifest["dim"], manifest["base_rows"]
    full = np.fromfile(folder / names["vectors"], np.float32, rows * dim).reshape(rows, dim)
    half = np.fromfile(folder / names["vectors16"], np.float16).reshape(-1, dim)
    return manifest, half, full


def test_graph_searches_rescore_from_a_half_copy_kept_in_step_with_the_vectors(tmp_path):
    import numpy as np

    folder, db = numbered_reports(tmp_path / "docs", 30), tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(numbered_reports(tmp_path / "few", 5))
        assert "vectors16" not in index_files.read_manifest(Path(f"{db}.index"))["files"]
        kb.ingest(folder)  # 35 vectors: a graph, and with it the float16 copy
        manifest, half, full = _half_copy(db)
        assert len(half) == manifest["base_rows"] == 35
        assert np.array_equal(half, full.astype(np.float16))
        kb.ingest(numbered_reports(folder, 2, start=30))  # rows in no graph yet: appended
        manifest, half, full = _half_copy(db)
        assert len(half) == 37 and np.array_equal(half, full.astype(np.float16))
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        dense = kb._index.searcher().dense
        assert dense.half and dense.ann is not None
        for i in (3, 31):
            assert _first_semantic(kb, i) == f"Report {i}"
            assert kb.search(QUERY.format(i, i * 3), mode="hybrid", k=1)[0].title == \
                f"Report {i}"


def test_a_kb_saved_before_the_half_copy_gets_it_on_open(tmp_path, monkeypatch):
    """A KB whose graphs were saved by the landed version (no vectors16 in the manifest)
    opens, searches, and writes the copy once (or, where it cannot write, still searches)."""
    import json

    import numpy as np

    folder, db = numbered_reports(tmp_path / "docs", 30), tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        kb.ingest(folder)
        before = [_first_semantic(kb, i) for i in (3, 17)]
    index = Path(f"{db}.index")
    manifest = index_files.read_manifest(index)
    (index / manifest["files"].pop("vectors16")).unlink()
    (index / index_files.MANIFEST).write_text(json.dumps(manifest))
    generation = manifest["generation"]

    def unwritable(*args, **kwargs):
        raise PermissionError("read-only file system")

    with monkeypatch.context() as patched:
        patched.setattr(index_save, "save_generation", unwritable)
        with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
            assert [_first_semantic(kb, i) for i in (3, 17)] == before
            assert not kb._index.searcher().dense.half  # float32 rescoring, as before
    with KnowledgeBase.open(db, embedder=HashingEmbedder()) as kb:
        assert [_first_semantic(kb, i) for i in (3, 17)] == before
        assert kb._index.searcher().dense.half
    manifest, half, full = _half_copy(db)
    assert manifest["generation"] == generation + 1
    assert np.array_equal(half, full.astype(np.float16))
