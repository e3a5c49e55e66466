"""How widely the approximate graphs are explored (knowledge/ann.py, expansion_for).

ef grows as the square root of a graph's size because a fixed ef of 256 was where hybrid
search lost its recall against exact at 1M chunks (ann.py says what was measured); small
graphs keep 256. Counts only: no timings.
"""

from __future__ import annotations

import os
import subprocess
import sys

from search_fakes import RecordingGraph

from agentmodes.knowledge import ann


def test_ef_is_256_for_small_graphs_384_at_100k_and_1024_at_1m():
    assert [ann.expansion_for(n) for n in (0, 1_000, 50_000, 62_500)] == [256] * 4
    assert ann.expansion_for(100_000) == 384 and ann.expansion_for(1_000_000) == 1024
    grown = [ann.expansion_for(n) for n in (70_000, 200_000, 500_000, 1_000_000, 4_000_000)]
    assert grown == sorted(grown) and len(set(grown)) == len(grown)  # grows with every step
    assert all(ef % 64 == 0 for ef in grown)


def test_each_graph_of_a_set_is_explored_by_its_own_size_unless_told():
    big, small = RecordingGraph(900_000), RecordingGraph(50_000)
    ann.GraphSet([big, small]).search(None, 256)
    assert big.asked == [(256, ann.expansion_for(900_000))] and big.asked[0][1] == 1024
    assert small.asked == [(ann.MIN_PER_GRAPH, 256)]
    ann.GraphSet([big]).search(None, 128, expansion=128)  # hybrid's feedback search
    assert big.asked[-1] == (128, 128)
    alone = RecordingGraph(1_000_000)
    ann.GraphSet([alone]).search(None, 256)
    assert alone.asked == [(256, 1024)]


REAL_GRAPH = """
import numpy as np
from agentmodes.knowledge import ann
ann.EXPANSION_AT_1M = 100_000  # 40 vectors: ef 100k * sqrt(4e-5) -> 640
rng = np.random.default_rng(3)
vectors = rng.normal(size=(40, 8)).astype(np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
graph = ann.ApproximateIndex.create(8)
graph.add(np.arange(40), vectors)
rows = graph.search(vectors[5], 3)
print(graph._index.expansion_search, ann.expansion_for(40), 5 in rows.tolist())
graph.search(vectors[5], 3, expansion=100)
print(graph._index.expansion_search)
"""


def test_a_real_graph_searches_with_the_ef_of_its_size():
    # In a child process: with usearch loaded, a later `import onnxruntime` (markitdown's
    # magika, test_kb_formats) segfaults this interpreter (usearch 2.26.6), so the pytest
    # process must not load it before those tests do.
    out = subprocess.run([sys.executable, "-c", REAL_GRAPH], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["640", "640", "True", "100"]


def test_agentmodes_ann_ef_fixes_one_ef_for_every_size():
    code = "from agentmodes.knowledge import ann; print(ann.expansion_for(10), " \
           "ann.expansion_for(10**6))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "AGENTMODES_ANN_EF": "300"}, check=True)
    assert out.stdout.split() == ["300", "300"]
