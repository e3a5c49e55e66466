"""Reciprocal rank fusion and z-score fusion arithmetic."""

import numpy as np
import pytest

from agentmodes.knowledge.fusion import reciprocal_rank_fusion, zscore_fusion, zscores


def test_rrf_sums_reciprocal_ranks_with_k_60():
    fused = dict(reciprocal_rank_fusion([[1, 2, 3], [3, 1]]))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_orders_best_first_and_respects_weights():
    assert [i for i, _ in reciprocal_rank_fusion([[1, 2, 3], [3, 1]])] == [1, 3, 2]
    weighted = reciprocal_rank_fusion([[1, 2], [2, 1]], weights=[1.0, 3.0])
    assert weighted[0][0] == 2
    assert weighted[0][1] == pytest.approx(1 / 62 + 3 / 61)


def test_rrf_custom_k_and_weight_mismatch():
    assert dict(reciprocal_rank_fusion([[7]], k=1))[7] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([[1], [2]], weights=[1.0])


def test_zscores_standardise_and_handle_constant_vectors():
    z = zscores(np.array([1.0, 2.0, 3.0]))
    assert z.mean() == pytest.approx(0.0, abs=1e-6)
    assert z.std() == pytest.approx(1.0, abs=1e-6)
    assert np.all(zscores(np.zeros(4)) == 0)


def test_zscore_fusion_mixes_by_alpha():
    lexical = np.array([2.0, 0.0])
    dense = np.array([0.0, 1.0])
    assert np.allclose(zscore_fusion(lexical, dense, alpha=0.25), [1.5, 0.25])
    assert np.allclose(zscore_fusion(lexical, dense, alpha=1.0), dense)
