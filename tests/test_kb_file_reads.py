"""The ingest's read-ahead thread (file_reads.py): files in order, reasons for the ones not
read, a bounded window, and a stop when the ingest stops early."""

from __future__ import annotations

import hashlib
import threading
import time

from agentmodes.knowledge import file_reads
from agentmodes.knowledge.file_reads import read_ahead


def test_files_come_in_order_with_hashes_and_reasons(tmp_path):
    paths = []
    for i in range(20):
        path = tmp_path / f"f{i:02d}.txt"
        path.write_bytes(f"text {i}".encode() * (i + 1))
        paths.append(path)
    paths.insert(5, tmp_path / "missing.txt")
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (3 << 20))
    paths.append(big)
    out = list(read_ahead(paths, max_bytes=2 << 20))
    assert [r.path for r in out] == paths
    assert out[5].skipped.startswith("cannot read:") and out[5].data is None
    assert out[-1].skipped == "larger than 2 MB" and out[-1].data is None
    for read in out[:5] + out[6:-1]:
        assert read.skipped is None and read.data == read.path.read_bytes()
        assert read.content_hash == hashlib.sha256(read.data).hexdigest()
        assert read.stat.st_size == len(read.data)


def test_the_thread_stays_within_its_window_and_stops_with_the_consumer(tmp_path, monkeypatch):
    monkeypatch.setattr(file_reads, "READ_AHEAD_FILES", 3)
    reads = []
    original = file_reads.read_file

    def counted(path, max_bytes):
        reads.append(path)
        return original(path, max_bytes)

    monkeypatch.setattr(file_reads, "read_file", counted)
    paths = []
    for i in range(50):
        path = tmp_path / f"f{i}.txt"
        path.write_text("x")
        paths.append(path)
    files = read_ahead(paths, max_bytes=1 << 20)
    first = next(files)
    assert first.path == paths[0]
    time.sleep(0.2)                   # let the thread run as far as it may
    assert len(reads) <= 1 + 3 + 1    # the one taken, a full window, one being read
    files.close()
    assert not any(t.name == "read-ahead" for t in threading.enumerate())
    assert len(reads) < len(paths)
