"""`agentmodes serve` as a child process on a free loopback port, for benchmarks and tests
that need a server exactly as a user runs it (own process, own event loop, own GIL)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

import httpx

from ..errors import AgentModesError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(db: Path | str, *, kb: Optional[Path | str] = None,
                   llm: Optional[str] = None, env: Optional[dict[str, str]] = None,
                   startup_timeout: float = 60.0, workers: int = 1,
                   process: Optional[list] = None) -> Iterator[str]:
    """Start `agentmodes serve` on 127.0.0.1, yield its base URL once /api/health answers,
    stop it (SIGTERM, then SIGKILL) on exit. `env` replaces the environment if given;
    `db`/`kb` may be paths or postgresql:// URLs; `process`, if given, receives the Popen."""
    port = free_port()
    cmd = [sys.executable, "-c", "from agentmodes.cli.main import run; run()", "serve",
           "--port", str(port), "--db", str(db), "--no-access-log", "--workers", str(workers)]
    if kb is not None:
        cmd += ["--kb", str(kb)]
    if llm is not None:
        cmd += ["--llm", llm]
    # stderr to a file, not a pipe nobody reads: a chatty server must never block on it.
    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    # Its own session: with --workers the supervisor has children, stopped with it.
    proc = subprocess.Popen(cmd, env=env if env is not None else dict(os.environ),
                            stdout=subprocess.DEVNULL, stderr=log, text=True,
                            start_new_session=True)
    if process is not None:
        process.append(proc)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise AgentModesError(f"agentmodes serve exited: {log.read().strip()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise AgentModesError(f"agentmodes serve did not start within "
                                      f"{startup_timeout:.0f} s")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
