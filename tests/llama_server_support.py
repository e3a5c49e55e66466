"""A real OpenAI-compatible server for tests: llama-cpp-python's `llama_cpp.server` with the
embedded default model, on a port the OS picks, stopped when the test module ends."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from agentmodes.llm.llamacpp import default_model_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(folder: Path, *, n_ctx: int = 2048) -> Iterator[str]:
    """Start the server; yields its /v1 base URL."""
    port = free_port()
    log_path = Path(folder) / "server.log"
    log = log_path.open("w")      # a file, not a pipe: the server logs a lot and would block
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
         "--n_threads", "1", "--n_threads_batch", "1"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log_path.read_text()[-500:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
