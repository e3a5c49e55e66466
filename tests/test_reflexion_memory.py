"""Reflexion's long-term memory in SQLite: last k per task, survives a new process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from agentmodes.errors import AgentModesError
from agentmodes.store.memory import InProcessMemory, ReflexionMemoryStore


def test_keeps_the_newest_three_in_order(tmp_path):
    store = ReflexionMemoryStore(tmp_path / "m.db")
    for n in range(1, 6):
        store.append("t1", f"lesson {n}")
    store.append("t2", "other task")
    store.append("t1", "   ")            # blank reflections are not stored
    assert store.load("t1") == ["lesson 3", "lesson 4", "lesson 5"]
    assert store.count("t1") == 3
    assert store.load("t1", k=2) == ["lesson 4", "lesson 5"]
    assert store.load("t2") == ["other task"]
    store.clear("t1")
    assert store.load("t1") == [] and store.load("t2") == ["other task"]


def test_survives_a_restart_in_another_process(tmp_path):
    db = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        from agentmodes.store.memory import ReflexionMemoryStore
        store = ReflexionMemoryStore({str(db)!r})
        for n in range(4):
            store.append("humaneval/0", f"lesson {{n}}")
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    assert ReflexionMemoryStore(db).load("humaneval/0") == ["lesson 1", "lesson 2", "lesson 3"]


def test_unusable_path_is_a_clear_error(tmp_path):
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(AgentModesError, match="memory store"):
        ReflexionMemoryStore(tmp_path / "dir.db")
    with pytest.raises(AgentModesError):
        ReflexionMemoryStore(tmp_path / "m.db", keep=0)


def test_in_process_memory_has_the_same_face():
    memory = InProcessMemory(keep=3)
    for n in range(5):
        memory.append("k", f"l{n}")
    assert memory.load("k") == ["l2", "l3", "l4"] and memory.load("k", 1) == ["l4"]
