"""Extraction in reused child processes with CPU-time and memory limits.

A parser meets documents nobody has looked at: a 184 KB PDF whose 1,000 pages share one
content stream of 1.7 M tokens keeps pypdf busy for hours, a crafted file can ask for
gigabytes. Extracted in the ingesting process, one such file stalls every later upload
(the server has one ingest worker) or takes the server down. So every document is
extracted by a worker process (extract_worker.py) that

- may use at most `memory_mb` of address space (RLIMIT_AS, for the worker's life),
- may spend at most `cpu_s` seconds of CPU on one document (RLIMIT_CPU, reset per
  document), and at most `wall_s` seconds of wall clock (the parent kills it after),

and a document that breaks a limit, or kills its worker any other way, is skipped with
its reason while the next document goes to a fresh worker. Workers are reused across
documents and ingests (start-up is paid once per process, not per file), so the cost per
document is one round trip through a pipe.

Limits: AGENTMODES_EXTRACT_CPU_S (60), AGENTMODES_EXTRACT_MEMORY_MB (2048),
AGENTMODES_EXTRACT_WALL_S (3 x the CPU limit).
"""

from __future__ import annotations

import atexit
import collections
import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from ..errors import ConfigError
from .extract import Extracted, UnreadableFile
from .extract_worker import HEADER, write_frame
from .prepare import Prepared, PrepareSpec


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a whole number of at least 1, not {raw!r}")
    return int(raw)


CPU_S, MEMORY_MB = 60, 2048
WAIT_S = 0.25


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    cpu_s: int = CPU_S              # CPU seconds for one document
    memory_mb: int = MEMORY_MB      # address space of a worker
    wall_s: int = 3 * CPU_S         # wall clock for one document

    @classmethod
    def from_env(cls) -> "ExtractionLimits":
        cpu = _env_int("AGENTMODES_EXTRACT_CPU_S", CPU_S)
        return cls(cpu_s=cpu, memory_mb=_env_int("AGENTMODES_EXTRACT_MEMORY_MB", MEMORY_MB),
                   wall_s=_env_int("AGENTMODES_EXTRACT_WALL_S", 3 * cpu))


class _NotStarted(Exception):
    pass


class _WorkerGone(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Worker:
    """One extraction process and its pipes."""

    def __init__(self, limits: ExtractionLimits):
        self.limits = limits
        # The parent's own import path, so the worker finds the same agentmodes (a source
        # checkout on PYTHONPATH included).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentmodes.knowledge.extract_worker", str(limits.memory_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, env=env,
            # Parsers log warnings about damaged files: shown only when debugging.
            stderr=None if os.environ.get("AGENTMODES_DEBUG") else subprocess.DEVNULL)

    def extract(self, path: Path, data: bytes, spec: PrepareSpec | None = None) -> tuple:
        """(status, value, retire); _NotStarted if the worker was gone before it got the
        document (not the document's fault), _WorkerGone if the document ended it."""
        try:
            write_frame(self.proc.stdin, pickle.dumps((str(path), data, self.limits.cpu_s,
                                                       spec), protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, OSError):
            raise _NotStarted() from None
        return pickle.loads(self._read_reply(time.monotonic() + self.limits.wall_s))

    def _read_reply(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        buffer = bytearray()
        need = HEADER.size
        header_done = False
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while len(buffer) < need:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(timeout=remaining):
                    self.kill()
                    raise _WorkerGone(f"extraction took longer than {self.limits.wall_s} s")
                chunk = os.read(fd, max(need - len(buffer), 1 << 16))
                if not chunk:
                    raise _WorkerGone(self._death())
                buffer += chunk
                if not header_done and len(buffer) >= HEADER.size:
                    need = HEADER.size + HEADER.unpack(bytes(buffer[:HEADER.size]))[0]
                    header_done = True
        return bytes(buffer[HEADER.size:need])

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the extraction worker stopped answering"
        if code == -signal.SIGXCPU:
            return f"extraction used more than its {self.limits.cpu_s} s of CPU time"
        if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
            return (f"extraction crashed or ran out of memory (limit {self.limits.memory_mb} "
                    f"MB; {signal.Signals(-code).name})")
        return f"the extraction worker ended unexpectedly (exit status {code})"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()         # EOF: the worker's loop ends
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.proc.stdout.close()


class ExtractionPool:
    """Up to `workers` extraction processes, started on demand and reused; thread-safe."""

    def __init__(self, limits: Optional[ExtractionLimits] = None, workers: int = 2):
        self.limits = limits or ExtractionLimits.from_env()
        self.workers = workers
        self._idle: list[_Worker] = []
        self._count = 0
        self._cond = threading.Condition()

    def extract(self, path: Path, data: bytes,
                spec: PrepareSpec | None = None) -> Extracted | Prepared:
        """Extracted title and blocks, or UnreadableFile with the reason (limits included).
        With `spec`, usually the document chunked and analysed (prepare.py)."""
        for attempt in (1, 2):
            worker = self._take()
            try:
                status, value, retire = worker.extract(path, data, spec)
            except _NotStarted:
                self._retire(worker)        # died between documents: try a fresh one once
                if attempt == 2:
                    raise UnreadableFile("the extraction worker could not be started") from None
                continue
            except _WorkerGone as gone:
                self._retire(worker)
                raise UnreadableFile(gone.reason) from None
            except BaseException:
                self._retire(worker)        # interrupted mid-answer: its pipe is out of step
                raise
            if retire:
                self._retire(worker)
            else:
                self._give(worker)
            if status == "ok":
                return value
            raise UnreadableFile(value)
        raise AssertionError("unreachable")

    def map(self, items: Iterable[tuple[Any, Path, bytes]], spec: PrepareSpec | None = None,
            *, ahead: int = 0, on_wait: Callable[[], None] | None = None
            ) -> Iterator[tuple[Any, Extracted | Prepared | UnreadableFile]]:
        """Extract (key, path, data) items; yield (key, Extracted/Prepared or UnreadableFile)
        in order.

        Up to `workers` documents are extracted at once and more are read ahead (`ahead`,
        at least 2 x workers), so the caller's own work on one document (chunking, storing)
        overlaps the extraction of the next ones. `items` is consumed lazily. `on_wait` is
        called whenever the next result has not been ready for WAIT_S (an ingest stores
        what it holds rather than sit on it while a slow document is extracted)."""
        def one(path: Path, data: bytes) -> Extracted | Prepared | UnreadableFile:
            try:
                return self.extract(path, data, spec)
            except UnreadableFile as err:
                return err

        def result(done: Future):
            while on_wait is not None and not wait([done], timeout=WAIT_S).done:
                on_wait()
            return done.result()

        window = max(ahead, 2 * self.workers)
        queued: collections.deque[tuple[Any, Future]] = collections.deque()
        source = iter(items)
        with ThreadPoolExecutor(max_workers=self.workers,
                                thread_name_prefix="extract") as threads:
            try:
                for key, path, data in source:
                    queued.append((key, threads.submit(one, path, data)))
                    if len(queued) >= window:
                        key, done = queued.popleft()
                        yield key, result(done)
                while queued:
                    key, done = queued.popleft()
                    yield key, result(done)
            finally:
                for _, pending in queued:
                    pending.cancel()

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        self._drop()

    def _take(self) -> _Worker:
        with self._cond:
            while True:
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        return worker
                    self._count -= 1
                if self._count < self.workers:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return _Worker(self.limits)
        except OSError as err:
            self._drop()
            raise UnreadableFile(f"cannot start the extraction worker: {err.strerror}") from None

    def _give(self, worker: _Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()

    def _drop(self) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.close()


_shared: Optional[ExtractionPool] = None
_shared_lock = threading.Lock()


def shared_pool() -> ExtractionPool:
    """The process's pool; a new one if the limits in the environment changed."""
    global _shared
    limits = ExtractionLimits.from_env()
    with _shared_lock:
        if _shared is None or _shared.limits != limits:
            if _shared is None:
                atexit.register(_close_shared)
            else:
                _shared.close()
            _shared = ExtractionPool(limits)
        return _shared


def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


def extract_isolated(path: Path, data: bytes) -> Extracted:
    """`extract(path, data)`, run by the shared pool under its limits."""
    return shared_pool().extract(path, data)
