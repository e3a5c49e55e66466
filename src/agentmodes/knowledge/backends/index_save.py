"""Write one generation of a saved index: only what changed, or everything when compacting.

Called by PersistedIndex.checkpoint with the writer lock held. An ordinary save appends the
new rows (chunk ids, vectors, has-vector flags) to the append-only files, writes vectors that
arrived late into their rows, freezes the lexical tail into a new segment (merging small
segments, lexical.py) and writes the small per-generation files (dead rows, moments, the
approximate graph when there is one). When a quarter of the rows are dead it compacts
instead: every file is rewritten with the live rows only, renumbered. The manifest is
written last (index_files.py: why that makes a kill at any point harmless).

Approximate graphs (ann.py) are only built by a save with `build_graphs` (the one at the end
of an ingest, or a reader repairing a lost index): saves in the middle of a long ingest list
new vectors as "uncovered", which searches score exactly, so those saves stay as cheap as
the rows they add. A build gives the uncovered rows a graph of their own; nothing already in
a graph is rewritten, except when more than MAX_GRAPHS graphs make the two smallest merge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..ann import ANN_MIN, MAX_GRAPHS, ApproximateIndex
from ..postings import Segment
from . import index_files as files
from .index_files import graphs_of

GATHER_ROWS = 50_000
UNCOVERED_MAX = 5_000  # new vectors kept out of the graph (scored exactly) until then


def graphs_due(manifest: dict, dense: Any) -> bool:
    """True if a save with build_graphs would build a graph (one is missing or due)."""
    if not dense.dim or len(dense) < ANN_MIN:
        return False
    if not graphs_of(manifest):
        return True
    return len(dense.uncovered) + len(dense.extra()[0]) > UNCOVERED_MAX


def save_generation(folder: Path, searcher: Any, old: dict, kb_id: str | None,
                    compact_dead: float, build_graphs: bool = True) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    lexical, dense = searcher.lexical, searcher.dense
    generation = int(old.get("generation", 0)) + 1
    dead = lexical.dead_rows()
    n_rows = lexical.n_rows
    compact = n_rows >= 100 and len(dead) > compact_dead * n_rows
    old_files = dict(old.get("files") or {})
    if compact:
        keep = lexical.alive_rows()
        segments = _compacted_segments(lexical, keep, folder, generation)
        row_ids, dead, old_files = lexical.row_ids()[keep], np.zeros(0, np.int64), {}
        rows_before = base_before = 0
    else:
        keep = None
        lexical.freeze()
        segments = _saved_segments(lexical, folder, generation)
        row_ids = lexical.row_ids()
        rows_before = old.get("rows", 0) if old_files.get("rows") else 0
        base_before = max(old.get("base_rows", 0), 0) if old_files.get("vectors") and \
            old.get("dim") == dense.dim else 0
    out_files = {"rows": old_files.get("rows") if rows_before else f"rows-{generation}.i64"}
    files.append_raw(folder / out_files["rows"], rows_before, 8, row_ids[rows_before:])
    manifest = {"format": files.FORMAT, "generation": generation, "kb_id": kb_id,
                "space": old.get("space"), "dim": dense.dim or 0, "rows": len(row_ids),
                "last_chunk_id": old["last_chunk_id"], "removed_seq": old["removed_seq"],
                "vector_seq": old["vector_seq"], "segments": segments, "base_rows": 0,
                "dead_count": len(dead), "files": out_files}
    if dense.dim:
        manifest["graphs"] = _save_vectors(
            folder, dense, keep, len(row_ids), base_before, old_files, out_files, generation,
            dead, graphs_of(old) if base_before else [], build_graphs or compact)
        manifest["base_rows"] = len(row_ids)
    if len(dead):
        out_files["dead"] = f"dead-{generation}.npy"
        _save_npy(folder / out_files["dead"], dead)
    for name, _, _ in segments:
        files.fsync_tree(folder / name)
    files.write_manifest(folder, manifest)
    referenced = set(out_files.values()) | {name for name, _, _ in segments} | \
        {name for name, _ in manifest.get("graphs") or []}
    files.remove_unreferenced(folder, {name for name in referenced if name})
    return manifest


def _saved_segments(lexical: Any, folder: Path, generation: int) -> list[list]:
    out = []
    for offset, segment in lexical.parts():
        if segment.name is None:
            segment.save(folder / f"seg-{generation}-{len(out)}")
        out.append([segment.name, int(offset), int(segment.n)])
    return out


def _compacted_segments(lexical: Any, keep: np.ndarray, folder: Path,
                        generation: int) -> list[list]:
    parts = []
    for offset, segment in lexical.parts():
        local = keep[(keep >= offset) & (keep < offset + segment.n)] - offset
        if len(local):
            parts.append(segment.take(local))
    merged = Segment.merge(parts) if parts else Segment.build([], [])
    name = f"seg-{generation}-0"
    merged.save(folder / name)
    return [[name, 0, int(merged.n)]]


def _save_vectors(folder: Path, dense: Any, keep: np.ndarray | None, n_rows: int,
                  base_before: int, old_files: dict, out_files: dict, generation: int,
                  dead: np.ndarray, old_graphs: list[list], build: bool) -> list[list]:
    dim = dense.dim
    continuing = base_before > 0
    out_files["vectors"] = old_files["vectors"] if continuing else f"vectors-{generation}.f32"
    out_files["has"] = old_files["has"] if continuing else f"has-{generation}.u8"
    source = keep if keep is not None else np.arange(n_rows)
    vectors_path, has_path = folder / out_files["vectors"], folder / out_files["has"]
    files.append_raw(vectors_path, base_before, dim * 4, np.zeros((0, dim), np.float32))
    files.append_raw(has_path, base_before, 1, np.zeros(0, np.uint8))
    for start in range(base_before, n_rows, GATHER_ROWS):
        rows = source[start:start + GATHER_ROWS]
        files.append_raw(vectors_path, start, dim * 4, dense.gather(rows))
        files.append_raw(has_path, start, 1, dense.has_vector(int(source[-1]) + 1)[rows]
                         .astype(np.uint8))
    late_rows, _ = dense.extra()
    late_rows = np.sort(late_rows[(late_rows < base_before)]) if continuing else late_rows[:0]
    late_rows = late_rows[dense.has_vector(n_rows)[late_rows]] if len(late_rows) else late_rows
    files.write_raw_rows(vectors_path, dim * 4, late_rows, dense.gather(late_rows))
    files.write_raw_rows(has_path, 1, late_rows, np.ones((len(late_rows), 1), np.uint8))
    sums, gram = dense.moments()
    out_files["moments"] = f"moments-{generation}.npy"
    _save_npy(folder / out_files["moments"], np.vstack([sums[None, :], gram]))
    graphs = _save_graphs(folder, dense, source, n_rows, base_before, late_rows, dead,
                          old_graphs, old_files, out_files, generation, build)
    if graphs:
        _save_half(folder, dense, source, n_rows, base_before if continuing else 0, late_rows,
                   old_files, out_files, generation)
    return graphs


def _save_half(folder: Path, dense: Any, source: np.ndarray, n_rows: int, base_before: int,
               late_rows: np.ndarray, old_files: dict, out_files: dict, generation: int) -> None:
    """The float16 copy searches rescore from (dense.DenseIndex.use_half says why), kept
    like vectors.f32: rows appended, late vectors written in place. A KB saved before the
    copy existed (or whose graphs are new) gets all of it written once."""
    dim = dense.dim
    name = old_files.get("vectors16") if base_before else None
    start = base_before if name else 0
    name = out_files["vectors16"] = name or f"vectors16-{generation}.f16"
    path = folder / name
    files.append_raw(path, start, dim * 2, np.zeros((0, dim), np.float16))
    for first in range(start, n_rows, GATHER_ROWS):
        rows = source[first:first + GATHER_ROWS]
        files.append_raw(path, first, dim * 2, dense.gather(rows).astype(np.float16))
    late_rows = late_rows[late_rows < start]
    files.write_raw_rows(path, dim * 2, late_rows, dense.gather(late_rows).astype(np.float16))


def _save_graphs(folder: Path, dense: Any, source: np.ndarray, n_rows: int, base_before: int,
                 late_rows: np.ndarray, dead: np.ndarray, old_graphs: list[list],
                 old_files: dict, out_files: dict, generation: int, build: bool) -> list[list]:
    """The graphs of this generation, built or extended as the module docstring says.

    Dead rows stay in a graph until it is merged or the rows are compacted; searches drop
    them (they have no live vector)."""
    has = dense.has_vector(int(source.max()) + 1 if len(source) else 0)

    def with_vector(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        return rows[has[source[rows]]] if len(rows) else rows

    if not old_graphs:
        if len(dense) < ANN_MIN or not build:
            return []  # searched exactly (ANN_MIN), or until the save that builds
        return [_build_graph(folder, dense, source, with_vector(np.arange(n_rows)),
                             f"ann-{generation}-0.usearch")]
    added = np.concatenate([np.arange(base_before, n_rows), late_rows]).astype(np.int64)
    previous = np.load(folder / old_files["ann_uncovered"]) \
        if old_files.get("ann_uncovered") else np.zeros(0, np.int64)
    uncovered = with_vector(np.union1d(previous, added))
    graphs = [list(g) for g in old_graphs]
    if build and len(uncovered) > UNCOVERED_MAX:
        graphs.append(_build_graph(folder, dense, source, uncovered,
                                   f"ann-{generation}-{len(graphs)}.usearch"))
        uncovered = uncovered[:0]
        graphs = _merge_smallest(folder, dense, graphs, has, dead, generation)
    if len(uncovered):
        out_files["ann_uncovered"] = f"ann-uncovered-{generation}.npy"
        _save_npy(folder / out_files["ann_uncovered"], uncovered)
    return graphs


def _build_graph(folder: Path, dense: Any, source: np.ndarray, rows: np.ndarray,
                 name: str) -> list:
    ann = ApproximateIndex.create(dense.dim)
    _add_rows(ann, dense, source, rows)
    return _write_graph(folder, ann, name)


def _add_rows(ann: ApproximateIndex, dense: Any, source: np.ndarray, rows: np.ndarray) -> None:
    for start in range(0, len(rows), GATHER_ROWS):
        part = rows[start:start + GATHER_ROWS]
        ann.add(part, dense.gather(source[part]))


def _write_graph(folder: Path, ann: ApproximateIndex, name: str) -> list:
    ann.save(folder / name)
    files.fsync_tree(folder / name)
    return [name, len(ann)]


def _merge_smallest(folder: Path, dense: Any, graphs: list[list], has: np.ndarray,
                    dead: np.ndarray, generation: int) -> list[list]:
    """Merge the two smallest graphs while there are more than MAX_GRAPHS: the smaller's
    live rows are added to a writable copy of the larger, which drops its dead rows."""
    while len(graphs) > MAX_GRAPHS:
        order = sorted(range(len(graphs)), key=lambda i: graphs[i][1])
        small, large = graphs[order[0]], graphs[order[1]]
        target = ApproximateIndex.open(folder / large[0], writable=True)
        target.remove(dead)
        rows = ApproximateIndex.open(folder / small[0]).rows()
        rows = rows[has[rows]]  # no merge during a compaction: rows are the in-memory ones
        _add_rows(target, dense, np.arange(len(has)), rows)
        merged = _write_graph(folder, target, f"ann-{generation}-m{len(graphs)}.usearch")
        graphs = [g for i, g in enumerate(graphs) if i not in order[:2]] + [merged]
    return graphs
def _save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, array)
        handle.flush()
    files.fsync_tree(path)
