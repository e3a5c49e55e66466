"""Lexical segments (postings.py): the vectorised build, the k-way merge and take give the
arrays of the straightforward construction (a Counter per row, a stable sort of the whole
forward index), which is what the searches' scores and feedback terms were measured on."""

from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np
import pytest

from agentmodes.knowledge.postings import ARRAYS, Segment


def reference(key_lists: list[list[int]], langs: list[int]) -> dict[str, np.ndarray]:
    """The segment as the code before the vectorised build made it."""
    counts = [Counter(keys) for keys in key_lists]
    lens = np.array([len(c) for c in counts], dtype=np.int64)
    fwd_keys = np.fromiter(chain.from_iterable(counts), dtype=np.int64, count=int(lens.sum()))
    fwd_tfs = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=np.uint16,
                          count=int(lens.sum()))
    fwd_starts = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    row_of = np.repeat(np.arange(len(lens), dtype=np.uint32), lens)
    order = np.argsort(fwd_keys, kind="stable")
    sorted_keys = fwd_keys[order]
    firsts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1]))) \
        if len(sorted_keys) else np.zeros(0, dtype=np.int64)
    return {"keys": sorted_keys[firsts], "starts": np.append(firsts, len(sorted_keys)),
            "rows": row_of[order], "tfs": fwd_tfs[order],
            "doclen": np.array([len(k) for k in key_lists], dtype=np.uint32),
            "fwd_starts": fwd_starts, "fwd_keys": fwd_keys, "fwd_tfs": fwd_tfs,
            "langs": np.asarray(langs, dtype=np.uint8)}


def corpus(rng: np.random.Generator, rows: int, vocabulary: int = 60) -> list[list[int]]:
    """Key lists with repeats, empty rows and keys of both signs (term keys are signed)."""
    words = rng.integers(-2**62, 2**62, size=vocabulary)
    return [words[rng.integers(0, vocabulary, size=int(rng.integers(0, 25)))].tolist()
            for _ in range(rows)]


def assert_same(segment: Segment, expected: dict[str, np.ndarray]) -> None:
    for name in ARRAYS:
        got = np.asarray(getattr(segment, name))
        assert got.dtype == expected[name].dtype or name == "starts", name
        assert np.array_equal(got, expected[name]), name


@pytest.mark.parametrize("seed", range(5))
def test_build_from_lists_and_from_arrays_equals_the_counter_construction(seed):
    rng = np.random.default_rng(seed)
    key_lists = corpus(rng, int(rng.integers(1, 80)))
    langs = rng.integers(0, 2, size=len(key_lists)).tolist()
    assert_same(Segment.build(key_lists, langs), reference(key_lists, langs))
    arrays = [np.asarray(k, dtype=np.int64) for k in key_lists]
    assert_same(Segment.build(arrays, langs), reference(key_lists, langs))


def test_empty_segments_build_and_merge():
    assert Segment.build([], []).n == 0
    only_empty_rows = Segment.build([[], []], [0, 1])
    assert only_empty_rows.n == 2 and len(only_empty_rows.keys) == 0
    rng = np.random.default_rng(9)
    lists = corpus(rng, 30)
    merged = Segment.merge([Segment.build([], []), Segment.build(lists[:10], [0] * 10),
                            only_empty_rows, Segment.build(lists[10:], [1] * 20)])
    expected = reference(lists[:10] + [[], []] + lists[10:], [0] * 10 + [0, 1] + [1] * 20)
    assert_same(merged, expected)


@pytest.mark.parametrize("seed", range(5))
def test_merge_of_sorted_segments_equals_one_segment_of_all_rows(seed, tmp_path):
    """Also from saved (memory-mapped) segments, as merges during an ingest read them."""
    rng = np.random.default_rng(100 + seed)
    key_lists = corpus(rng, 120, vocabulary=int(rng.integers(5, 200)))
    langs = rng.integers(0, 2, size=len(key_lists)).tolist()
    cuts = np.sort(rng.choice(np.arange(1, 120), size=int(rng.integers(1, 6)), replace=False))
    bounds = [0, *cuts.tolist(), 120]
    parts = [Segment.build(key_lists[a:b], langs[a:b]) for a, b in zip(bounds, bounds[1:])]
    parts[0].save(tmp_path / "first")
    parts[0] = Segment.load(tmp_path / "first")
    assert_same(Segment.merge(parts), reference(key_lists, langs))


@pytest.mark.parametrize("seed", range(4))
def test_take_keeps_the_rows_asked_for_in_any_order(seed):
    rng = np.random.default_rng(200 + seed)
    key_lists = corpus(rng, 60)
    langs = rng.integers(0, 2, size=60).tolist()
    segment = Segment.build(key_lists, langs)
    ascending = np.sort(rng.choice(60, size=int(rng.integers(1, 60)), replace=False))
    for rows in (ascending, rng.permutation(ascending)):
        expected = reference([key_lists[r] for r in rows], [langs[r] for r in rows])
        assert_same(segment.take(rows), expected)
