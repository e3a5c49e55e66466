"""Reading an ingest's files ahead of the writer, in a thread.

The ingesting process reads every file, hashes it and writes the results of the extraction
workers to SQLite. Reading in that same loop made the writer wait for the disk: at 1M
chunks (100k files, a cold page cache) reading was 15% of its wall time, with both cores
otherwise busy. File reads and SHA-256 of more than a couple of KB release the GIL, so a
thread that reads (and hashes) a few files ahead overlaps that wait with the writer's work.
It stays a bounded window (READ_AHEAD_FILES and READ_AHEAD_BYTES of file data), so a folder
of big PDFs does not fill the memory, and files come out in the order given.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

READ_AHEAD_FILES = 64
READ_AHEAD_BYTES = 32 * 1024 * 1024


@dataclass(slots=True)
class FileRead:
    """One file as read: its stat, bytes and hash, or the reason it was not read."""
    path: Path
    stat: os.stat_result | None = None
    data: bytes | None = None
    content_hash: str | None = None
    skipped: str | None = None


def read_file(path: Path, max_bytes: int) -> FileRead:
    try:
        stat = path.stat()
        if stat.st_size > max_bytes:
            return FileRead(path, stat, skipped=f"larger than {max_bytes >> 20} MB")
        data = path.read_bytes()
    except OSError as err:
        return FileRead(path, skipped=f"cannot read: {err.strerror or err}")
    return FileRead(path, stat, data, hashlib.sha256(data).hexdigest())


def read_ahead(paths: list[Path], max_bytes: int) -> Iterator[FileRead]:
    """read_file of each path, in order, read by a thread up to the window ahead."""
    cond = threading.Condition()
    ready: deque[FileRead | BaseException] = deque()
    state = {"held": 0, "stop": False}

    def reader() -> None:
        for path in paths:
            with cond:
                while not state["stop"] and (len(ready) >= READ_AHEAD_FILES or
                                             state["held"] >= READ_AHEAD_BYTES):
                    cond.wait()
                if state["stop"]:
                    return
            try:
                item: FileRead | BaseException = read_file(path, max_bytes)
            except BaseException as err:  # noqa: BLE001 - e.g. MemoryError: raised below
                item = err
            with cond:
                ready.append(item)
                state["held"] += len(item.data or b"") if isinstance(item, FileRead) else 0
                cond.notify_all()

    thread = threading.Thread(target=reader, name="read-ahead", daemon=True)
    thread.start()
    try:
        for _ in paths:
            with cond:
                while not ready:
                    cond.wait()
                item = ready.popleft()
                state["held"] -= len(item.data or b"") if isinstance(item, FileRead) else 0
                cond.notify_all()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()
        thread.join()
