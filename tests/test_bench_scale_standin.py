"""The scale benchmark's stand-in embedder: its memoised buckets give the vectors of the
plain per-word loop (the vectors every committed scale figure was measured with)."""

import zlib

import numpy as np

from agentmodes.bench.scale_corpus import _WORD, StandInEmbedder


def plain(texts, dim=384):
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            out[i, zlib.crc32(word[:6].encode()) % dim] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def test_memoised_buckets_give_the_plain_loop_vectors(monkeypatch):
    texts = ["Reference REF-0000042 covers item AB-12345 at 42.0.", "", "Straße und Öffnung",
             "the the the wing", "Reference REF-0000043 covers the wing"]
    embedder = StandInEmbedder()
    monkeypatch.setattr(StandInEmbedder, "CACHE_WORDS", 3)  # the memo fills and is cleared
    for _ in range(2):
        assert np.array_equal(embedder.embed_passages(texts), plain(texts))
    assert np.array_equal(embedder.embed_query(texts[0]), plain(texts[:1])[0])
    assert embedder.embed_passages([]).shape == (0, 384)
