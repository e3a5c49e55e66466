"""The files of a saved search index (`<kb file>.index/`) and how they are written safely.

    manifest.json        which files make up the index and what it contains: the KB's kb_id,
                         the vector space (embedder), rows, last chunk id and change-log
                         sequence numbers included, generation number
    rows.i64             chunk id of each row (raw int64, append-only)
    vectors.f32          one float32 vector per row (raw, append-only; a vector that arrives
                         after its row was saved is written into its row in place)
    has.u8               1 where a row has a vector (raw, like vectors.f32)
    vectors16-G.f16      float16 copy of vectors.f32 that graph searches rescore from
                         (dense.py, use_half); only with graphs; the manifest's
                         files.vectors16 (an index saved without it gets it on open)
    seg-*/               lexical segments (postings.py), immutable
    dead-G.npy           rows whose chunk was removed
    moments-G.npy        sum and Gram matrix of the vectors (dense.py)
    ann-G-i.usearch      approximate nearest-neighbour graphs (ann.py), large KBs only;
                         the manifest's "graphs" lists them (format 1 named one, files.ann)
    ann-uncovered-G.npy  rows with a vector in no graph yet (scored exactly)

Crash safety: every file is written before the manifest that names it, fsynced, and the
manifest is replaced by an atomic rename, so a kill at any moment leaves the previous
manifest with all its files intact. Append-only files may carry a partial tail from a killed
writer; the manifest's row count says how much is valid, and the next writer truncates the
rest. Files of older generations are deleted after the switch (processes that still map
them keep reading them: unlinked files stay valid on Linux and macOS).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

FORMAT = 1
MANIFEST = "manifest.json"


def read_manifest(folder: Path) -> dict | None:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def graphs_of(manifest: dict) -> list[list]:
    """[[file name, rows], ...] of a manifest's approximate graphs (format 1 named one)."""
    if manifest.get("graphs") is not None:
        return [list(g) for g in manifest["graphs"]]
    single = (manifest.get("files") or {}).get("ann")
    return [[single, -1]] if single else []


def write_manifest(folder: Path, manifest: dict) -> None:
    tmp = folder / f"{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, folder / MANIFEST)
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    paths = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for file in paths:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    if path.is_dir():
        fsync_dir(path)


def raw_array(path: Path, dtype, count: int, width: int = 1) -> np.ndarray:
    """The first `count` records of a raw append-only file, memory-mapped (empty if none)."""
    if count == 0:
        return np.zeros((0, width) if width > 1 else 0, dtype=dtype)
    shape = (count, width) if width > 1 else (count,)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def append_raw(path: Path, valid_records: int, record_bytes: int, data: np.ndarray) -> None:
    """Cut `path` to its valid records (dropping a killed writer's partial tail), append."""
    with open(path, "ab+") as handle:
        handle.truncate(valid_records * record_bytes)
        handle.seek(valid_records * record_bytes)
        handle.write(np.ascontiguousarray(data).tobytes())
        handle.flush()
        os.fsync(handle.fileno())


def write_raw_rows(path: Path, record_bytes: int, rows: np.ndarray, data: np.ndarray) -> None:
    """Overwrite records `rows` in place (vectors that came after their row was saved)."""
    if not len(rows):
        return
    rows = np.asarray(rows, dtype=np.int64)
    data = np.ascontiguousarray(data)
    # one write per run of consecutive rows (vectors arrive in chunk order, so runs are long)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    fd = os.open(path, os.O_RDWR)
    try:
        for start, stop in zip(np.concatenate(([0], breaks)).tolist(),
                               np.concatenate((breaks, [len(rows)])).tolist()):
            os.pwrite(fd, data[start:stop].tobytes(), int(rows[start]) * record_bytes)
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_unreferenced(folder: Path, keep: set[str]) -> None:
    """Delete files and segment folders no manifest names any more (older generations)."""
    for entry in folder.iterdir():
        if entry.name in keep or entry.name in (MANIFEST, "lock"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


@contextmanager
def writer_lock(folder: Path, wait: float) -> Iterator[bool]:
    """An exclusive lock on the index folder for saving (yields False if not had within
    `wait` seconds). flock is released by the kernel when a holder dies, even by kill -9."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.05)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
