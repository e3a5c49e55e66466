"""Calibrated confidence: range, monotonicity, the fitted model file, the threshold rule."""

import numpy as np

from agentmodes.bench import calibration
from agentmodes.knowledge.confidence import (FEATURES, confidences, fit_logistic,
                                             high_confidence_threshold, load_model)
from agentmodes.knowledge.searcher import Searcher
from search_fakes import HashingEmbedder


def _features(mode, z, margin, coverage, cosine, agree=None):
    out = {"z": np.array(z, float), "margin": np.array(margin, float),
           "coverage": np.array(coverage, float), "rank": np.log1p(np.arange(len(z)))}
    if "cosine" in FEATURES[mode]:
        out["cosine"] = np.array(cosine, float)
    if "agree" in FEATURES[mode]:
        out["agree"] = np.zeros(len(z)) if agree is None else np.array(agree, float)
    return out


def test_packaged_model_covers_every_mode_with_a_sane_threshold():
    model = load_model()
    assert set(model["modes"]) == set(FEATURES)
    for mode, entry in model["modes"].items():
        assert entry["features"] == list(FEATURES[mode])
        assert len(entry["coef"]) == len(FEATURES[mode]) + 1
    assert 0.0 < high_confidence_threshold() < 1.0


def test_confidence_in_range_and_never_rising_down_the_list():
    for mode in FEATURES:
        conf = np.asarray(confidences(mode, _features(mode, [9, 2, 8, 1], [7, -6, 7, 0],
                                                      [1, 0.2, 1, 0], [0.9, 0.7, 0.9, 0.6])))
        assert np.all((conf >= 0) & (conf <= 1))
        assert np.all(np.diff(conf) <= 0)


def test_a_clear_winner_is_more_confident_than_a_crowd():
    for mode in ("lexical", "semantic", "hybrid"):
        clear = confidences(mode, _features(mode, [12], [8], [1.0], [0.92], [1.0]))[0]
        crowd = confidences(mode, _features(mode, [1.5], [0.01], [0.2], [0.75]))[0]
        assert clear > crowd
        assert clear >= high_confidence_threshold() > crowd


def test_confidence_grows_with_the_evidence():
    for mode in ("lexical", "semantic", "hybrid"):
        scores = [confidences(mode, _features(mode, [z], [1.0], [0.5], [0.8]))[0]
                  for z in (1, 3, 6, 10)]
        assert scores == sorted(scores)
    for mode in ("lexical/small", "semantic/small", "hybrid/small"):
        scores = [confidences(mode, _features(mode, [0], [0], [c], [0.5 + c / 4]))[0]
                  for c in (0.0, 0.3, 0.6, 1.0)]
        assert scores == sorted(scores)


def test_fit_logistic_recovers_a_separating_direction():
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    y = (x + 0.3 * rng.normal(size=400) > 0).astype(float)
    coef = fit_logistic(np.column_stack([np.ones(400), x]), y)
    assert coef[1] > 2.0
    assert abs(coef[0]) < 1.0


def test_threshold_is_the_lowest_with_90_percent_precision_in_every_cell():
    rng = np.random.default_rng(1)
    conf_a = rng.uniform(0, 1, 400)
    good_a = (rng.uniform(0, 1, 400) < conf_a).astype(float)  # calibrated: P(good) = conf
    conf_b = rng.uniform(0, 1, 400)
    good_b = (conf_b > 0.8).astype(float)  # set B: relevant exactly above 0.8
    points = {("A", "lexical"): (conf_a, good_a), ("B", "lexical"): (conf_b, good_b),
              ("B", "lexical/small"): (conf_b, np.zeros(400))}  # /small cells do not vote
    threshold = calibration.choose_threshold(points)
    for conf, good in (points[("A", "lexical")], points[("B", "lexical")]):
        precision, coverage, n = calibration.precision_coverage(conf, good, threshold, 400)
        assert precision >= 0.9 and n > 0
    lower = round(threshold - 0.01, 2)
    assert any(calibration.precision_coverage(c, g, lower, 400)[0] < 0.9
               for c, g in (points[("A", "lexical")], points[("B", "lexical")]))


def test_tiny_knowledge_base_uses_size_independent_features():
    # One chunk: z-scores are degenerate, yet a hit that matches every query term closely
    # must not get zero confidence.
    embedder = HashingEmbedder()
    text = "The last ferry leaves the harbour at midnight."
    searcher = Searcher([1], [text], embedder.embed_passages([text]), embedder=embedder)
    for mode in ("lexical", "semantic", "hybrid"):
        hit = searcher.search("when does the last ferry leave the harbour", mode=mode, k=1)[0]
        other = searcher.search("ferry tickets for bicycles and dogs", mode=mode, k=1)
        assert hit.confidence > 0.3, mode
        assert not other or other[0].confidence < hit.confidence, mode


def test_search_hits_carry_confidence_from_the_model():
    embedder = HashingEmbedder()
    texts = [f"note {i} about topic {i % 7} and colour {i % 5}" for i in range(60)]
    texts[17] = "the secret password for the staff wifi is printed on the fridge"
    searcher = Searcher(list(range(60)), texts, embedder.embed_passages(texts), embedder=embedder)
    for mode in ("lexical", "semantic", "hybrid"):
        hits = searcher.search("staff wifi password fridge", mode=mode, k=5)
        assert hits[0].chunk_id == 17
        assert all(h.confidence < hits[0].confidence for h in hits[1:])
        vague = searcher.search("note about topic", mode=mode, k=5)
        assert vague[0].confidence < hits[0].confidence, mode


def test_rescaling_keeps_order_and_puts_each_anchor_on_the_threshold():
    from agentmodes.knowledge.confidence import rescale
    for anchor in (0.6, 0.75, 0.91):
        values = [rescale(p, anchor, 0.9) for p in np.linspace(0, 1, 101)]
        assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0
        assert rescale(anchor, anchor, 0.9) == 0.9
        assert rescale(anchor - 0.01, anchor, 0.9) < 0.9
    assert rescale(1.0, 1.0, 0.9) < 0.9  # no safe raw value: never high confidence


def test_packaged_threshold_held_90_percent_on_every_set_and_mode():
    # The figures the benchmark stored with the model: out-of-fold top-hit precision at
    # HIGH_CONFIDENCE on each shared set. A refit that lets any set drop below 90% (as
    # Cranfield did, at 0.33, before the per-set anchors) must not ship.
    model = load_model()
    held_out = [f for f in model["figures"]
                if f["split"] in ("held-out", "nested") and "/" not in f["mode"]]
    assert {f["dataset"] for f in held_out} == {"hotpotqa", "cranfield", "xquad-en"}
    assert {f["mode"] for f in held_out} == {"lexical", "semantic", "hybrid"}
    assert {f["split"] for f in held_out} == {"held-out", "nested"}
    for f in held_out:
        assert f["threshold"] == high_confidence_threshold()
        assert f["precision"] is not None and f["precision"] >= 0.9, f
        assert f["coverage"] > 0.0, f
    hybrid = {f["dataset"]: f["coverage"] for f in held_out
              if f["mode"] == "hybrid" and f["split"] == "held-out"}
    assert hybrid["hotpotqa"] >= 0.5 and hybrid["xquad-en"] >= 0.4


def test_hybrid_marks_the_hit_both_methods_rank_first():
    embedder = HashingEmbedder()
    texts = [f"note {i} about topic {i % 7} and colour {i % 5}" for i in range(60)]
    texts[17] = "the secret password for the staff wifi is printed on the fridge"
    searcher = Searcher(list(range(60)), texts, embedder.embed_passages(texts), embedder=embedder)
    ranking = searcher.rank("staff wifi password fridge", "hybrid", 5)
    assert ranking.ids[0] == 17
    assert ranking.features["agree"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
