"""Searcher: the three modes, incremental updates, partial embeddings, bad input."""

import numpy as np
import pytest

from agentmodes.errors import AgentModesError, ConfigError
from agentmodes.knowledge.searcher import Searcher
from search_fakes import HashingEmbedder

DOCS = {
    1: "The library opens at nine in the morning and closes at six.",
    2: "Bicycles can be parked in the yard behind the library building.",
    3: "The reading room has two hundred seats and free wireless internet.",
    4: "Membership cards are issued at the front desk for a small fee.",
}


def make(embed: bool = True, **kwargs) -> tuple[Searcher, HashingEmbedder]:
    embedder = HashingEmbedder()
    ids, texts = list(DOCS), list(DOCS.values())
    vectors = embedder.embed_passages(texts) if embed else None
    return Searcher(ids, texts, vectors, embedder=embedder, **kwargs), embedder


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_each_mode_finds_the_matching_chunk(mode):
    searcher, _ = make()
    hits = searcher.search("where can I park my bicycle", mode=mode, k=3)
    assert hits[0].chunk_id == 2
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0.0 <= h.confidence <= 1.0 for h in hits)
    assert len(hits) <= 3


def test_add_and_remove_change_results():
    searcher, embedder = make()
    searcher.add([5], ["Parking for cars is in the garage on Mill Street."])
    assert 5 in [h.chunk_id for h in searcher.search("garage parking", mode="lexical", k=2)]
    searcher.remove([5, 2])
    ids = [h.chunk_id for h in searcher.search("parking garage bicycle", mode="hybrid", k=4)]
    assert 5 not in ids and 2 not in ids
    assert len(searcher) == 3


def test_replacing_a_chunk_reindexes_its_text():
    searcher, _ = make()
    searcher.add([3], ["Opening hours on Sunday are from noon to four."])
    assert searcher.search("reading room seats", mode="lexical", k=4) == [] or \
        3 not in [h.chunk_id for h in searcher.search("reading room seats", mode="lexical", k=4)]
    assert searcher.search("Sunday", mode="lexical", k=1)[0].chunk_id == 3


def test_hybrid_uses_the_vectors_that_exist():
    embedder = HashingEmbedder()
    ids, texts = list(DOCS), list(DOCS.values())
    # Only chunks 1 and 3 are embedded so far; chunk 2 must still be found by its words.
    searcher = Searcher(ids, texts, embedder.embed_passages([texts[0], texts[2]]),
                        vector_ids=[1, 3], embedder=embedder)
    assert searcher.search("bicycles parked in the yard", mode="hybrid", k=2)[0].chunk_id == 2
    assert {h.chunk_id for h in searcher.search("bicycles", mode="semantic", k=4)} <= {1, 3}
    searcher.add_vectors([2], embedder.embed_passages([texts[1]]))
    assert 2 in {h.chunk_id for h in searcher.search("bicycles yard", mode="semantic", k=4)}


def test_semantic_without_embedder_or_vectors_is_a_clear_error():
    searcher, _ = make(embed=False)
    with pytest.raises(AgentModesError, match="embeddings"):
        searcher.search("library", mode="semantic")
    plain = Searcher(list(DOCS), list(DOCS.values()))
    with pytest.raises(AgentModesError, match="embedder"):
        plain.search("library", mode="semantic")
    # hybrid with nothing embedded still answers from the words
    assert plain.search("membership cards", mode="hybrid", k=1)[0].chunk_id == 4


def test_bad_queries_and_modes():
    searcher, _ = make()
    with pytest.raises(AgentModesError, match="empty query"):
        searcher.search("   ", mode="lexical")
    with pytest.raises(ConfigError):
        searcher.search("library", mode="fuzzy")
    assert searcher.search("zebra xylophone", mode="lexical") == []
    assert Searcher([], []).search("library", mode="lexical") == []


def test_dense_replaces_vectors_and_rejects_wrong_dimensions():
    searcher, embedder = make()
    with pytest.raises(ValueError):
        searcher.add_vectors([1], np.ones((1, 3), dtype=np.float32))
    # Give chunk 4 the vector of the bicycle text: semantic search now ranks it first.
    searcher.add_vectors([4], embedder.embed_passages([DOCS[2]]))
    top = searcher.search(DOCS[2], mode="semantic", k=2)
    assert {h.chunk_id for h in top} == {2, 4}


def test_coverage_from_the_postings_equals_the_share_of_query_terms_in_each_chunk(monkeypatch):
    """coverage reads the query terms' posting lists, across frozen segments and the tail."""
    from agentmodes.knowledge import lexical

    monkeypatch.setattr(lexical, "TAIL_ROWS", 2)  # two segments (5 + 2 rows) and a tail
    texts = ["red apples and green pears", "green tea", "apples apples", "blue sky",
             "red sky at night", "pears", "tea with apples", "red tea"]
    searcher = Searcher([], [])
    for first, stop in ((0, 5), (5, 7), (7, 8)):
        searcher.add(list(range(10 + first, 10 + stop)), texts[first:stop])
    index = searcher.lexical
    assert len(index.segments) >= 2 and index._tail
    terms = index.query_terms("red apples with tea")
    rows = np.arange(len(texts))
    expected = [len(set(terms) & set(index.row_keys(r).tolist())) / len(set(terms))
                for r in rows]
    assert index.coverage(terms, rows).tolist() == pytest.approx(expected)
    assert index.coverage(terms, rows[::-1]).tolist() == pytest.approx(expected[::-1])
    assert max(expected) > 0.5 and min(expected) == 0.0


def test_rescoring_from_the_half_copy_uses_float32_for_vectors_added_since():
    """DenseIndex.rescore: saved rows from the float16 copy, rows whose vector came after
    the save (in memory) exactly, rows without a vector 0; reused rows give the same."""
    from agentmodes.knowledge.dense import DenseIndex

    rng = np.random.default_rng(4)
    base = rng.standard_normal((50, 16)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    dense = DenseIndex()
    has = np.ones(50, dtype=bool)
    has[7] = False
    dense.load(base, has, (base.astype(np.float64).sum(0), base.T.astype(np.float64) @ base))
    dense.use_half(base.astype(np.float16))
    late = rng.standard_normal((2, 16)).astype(np.float32)
    dense.add([3, 52], late)  # a saved row's new vector, and a row past the copy
    query = rng.standard_normal((2, 16)).astype(np.float32)
    rows = np.array([1, 3, 7, 20, 52])
    got = dense.rescore(rows, query)
    assert got.shape == (5, 2)
    assert np.allclose(got[[0, 3]], base[[1, 20]] @ query.T, atol=2e-3)
    assert np.allclose(got[[1, 4]], late @ query.T, atol=1e-6)
    assert (got[2] == 0).all()
    assert np.array_equal(dense.rescore(np.array([1, 3, 7, 20, 30, 52]), query)[[0, 1, 2, 3, 5]],
                          got)
