"""The benchmark embedding cache resumes an interrupted passage run at its last checkpoint."""

import numpy as np
import pytest

from agentmodes.bench import embed_cache
from agentmodes.bench.scale_corpus import StandInEmbedder


class Interrupted(Exception):
    pass


class CountingEmbedder(StandInEmbedder):
    """The stand-in embedder, counting texts and failing once after `fail_after` calls."""

    def __init__(self, fail_after=None):
        super().__init__()
        self.texts_embedded = 0
        self.calls = 0
        self.fail_after = fail_after

    def embed_passages(self, texts):
        if self.fail_after is not None and self.calls == self.fail_after:
            raise Interrupted
        self.calls += 1
        self.texts_embedded += len(texts)
        return super().embed_passages(texts)


def test_interrupted_passages_resume_from_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(embed_cache, "CHECKPOINT_TEXTS", 4)
    texts = [f"passage number {i} about wing {i % 3}" for i in range(10)]
    first = CountingEmbedder(fail_after=2)
    with pytest.raises(Interrupted):
        embed_cache.cached_embeddings(first, texts, "passage", tmp_path)
    assert first.texts_embedded == 8

    second = CountingEmbedder()
    matrix = embed_cache.cached_embeddings(second, texts, "passage", tmp_path)
    assert second.texts_embedded == 2  # only the unfinished slice
    np.testing.assert_allclose(matrix, StandInEmbedder().embed_passages(texts), atol=1e-6)
    assert not list(tmp_path.rglob("*.partial.npy"))

    third = CountingEmbedder()
    again = embed_cache.cached_embeddings(third, texts, "passage", tmp_path)
    assert third.texts_embedded == 0
    np.testing.assert_array_equal(again, matrix)
