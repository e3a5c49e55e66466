"""The support judge's word threshold is chosen for precision (bench/compose_calibration.py)."""

from agentmodes.bench.compose_calibration import MAX_FALSE_SUPPORT, word_threshold

# A calibration table as bench/compose_calibration.py writes it (300 questions, 891 claims).
TABLE = [{"threshold": t, "positives_kept": p, "negatives_kept": n} for t, p, n in [
    (0.2, 0.993, 0.401), (0.3, 0.980, 0.298), (0.4, 0.960, 0.212), (0.45, 0.899, 0.160),
    (0.5, 0.896, 0.158), (0.55, 0.815, 0.089), (0.6, 0.781, 0.071), (0.7, 0.566, 0.025)]]


def test_the_lowest_threshold_within_the_false_support_budget_is_chosen():
    chosen = word_threshold(list(reversed(TABLE)))
    assert chosen["threshold"] == 0.55
    assert chosen["negatives_kept"] <= MAX_FALSE_SUPPORT


def test_no_threshold_within_budget_falls_back_to_the_strictest():
    loose = [dict(row, negatives_kept=0.5) for row in TABLE]
    assert word_threshold(loose)["threshold"] == 0.7
