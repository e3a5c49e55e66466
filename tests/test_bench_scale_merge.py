"""bench scale keeps the sizes an earlier run measured into the same results folder."""

from __future__ import annotations

import json

from agentmodes.bench.scale_report import merge_previous


def _row(size: int, measured: str | None = None) -> dict:
    row = {"chunks": size, "size": size, "load_avg_1min": 1.0}
    if measured:
        row["measured"] = measured
    return row


def test_a_run_of_small_sizes_keeps_the_earlier_1m_row(tmp_path):
    old = {"measured": "2026-12-01 20:30 UTC", "sizes": [_row(1000), _row(1_000_000)],
           "embedding": {"runs": []}}
    (tmp_path / "scale.json").write_text(json.dumps(old), encoding="utf-8")
    new = {"measured": "2026-12-01 20:55 UTC",
           "sizes": [_row(100_000, "2026-12-01 20:55 UTC"), _row(1000, "2026-12-01 20:51 UTC")]}
    merged = merge_previous(new, tmp_path)
    assert [r["size"] for r in merged["sizes"]] == [1000, 100_000, 1_000_000]
    # the re-measured 1k row replaces the old one; the 1M row keeps its own time
    assert merged["sizes"][0]["measured"] == "2026-12-01 20:51 UTC"
    assert merged["sizes"][2]["measured"] == "2026-12-01 20:30 UTC"
    assert merged["embedding"]["measured"] == "2026-12-01 20:30 UTC"


def test_no_earlier_results_leave_the_run_as_it_is(tmp_path):
    new = {"measured": "now", "sizes": [_row(1000, "now")]}
    assert merge_previous(new, tmp_path) == new
