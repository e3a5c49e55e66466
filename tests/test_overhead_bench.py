"""Smoke runs of `agentmodes bench overhead` (bench/overhead.py); timings are never asserted."""

import pytest

from agentmodes.bench import overhead


@pytest.mark.parametrize("name", ["python loop (floor)", overhead.OURS,
                                  "agentmodes ACT (native tool calls)"])
def test_measure_runs_the_episode_and_counts_calls(name):
    m = overhead.measure(name, iterations=4, runs=3, warmup=1)
    assert m.error is None and m.runs == 3 and len(m.times_us) == 3
    assert m.median_us > 0 and m.p95_us >= m.median_us
    assert m.calls_per_iteration > 0


def test_call_count_is_deterministic():
    run = overhead.ours(5)
    run()
    assert overhead.count_calls(run) == overhead.count_calls(run)


def test_a_broken_peer_is_reported_not_raised(monkeypatch):
    def broken(iterations):
        raise ImportError("No module named 'langgraph'")
    monkeypatch.setitem(overhead.FRAMEWORKS, "LangGraph create_react_agent", ("langgraph", broken))
    m = overhead.measure("LangGraph create_react_agent", 3, 3)
    assert m.error.startswith("ImportError") and m.runs == 0


@pytest.mark.slow
def test_full_run_against_the_peers_writes_a_table():
    report = overhead.run_all(iterations=5, runs=6)
    names = [r["framework"] for r in report["results"]]
    assert set(overhead.PEERS) <= set(names)
    assert all(r["error"] is None for r in report["results"]), report["results"]
    table = overhead.markdown(report)
    assert table.count("\n|") == len(names) + 2
