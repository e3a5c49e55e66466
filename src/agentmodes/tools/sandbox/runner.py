"""The sandbox's parent side: start child.py in its own session, feed it, bound its output,
kill its whole process group at the deadline, clean up its directory.

Thread-safe and without preexec_fn (unsafe with threads), so evaluators can run several
programs at once from a thread pool; everything privileged happens in child.py.
"""

from __future__ import annotations

import functools
import marshal
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from ...errors import AgentModesError
from .limits import SandboxLimits, SandboxResult

CHILD = str(Path(__file__).with_name("child.py"))
SETUP_FAILED = 125
PROGRAM = "main.py"
SHM_MB = 64             # private /dev/shm per run (tmpfs pages are not in RLIMIT_AS)
# Only what a Python program needs; nothing of the caller's environment (API keys, tokens).
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
             "HOME": "/tmp", "TMPDIR": "/tmp"}
LEVELS = ("namespaces", "userns", "basic")
_SIGNAL_REASONS = {signal.SIGXCPU: "cpu limit", signal.SIGXFSZ: "file size limit",
                   signal.SIGKILL: "SIGKILL (cpu time or memory limit)"}


class SandboxError(AgentModesError):
    """The sandbox itself could not start (not: the program failed)."""


def sandbox_interpreter() -> str:
    # The base interpreter, not the venv shim: the program runs with -I -S, stdlib only.
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


_active_uids: set[int] = set()
_uid_lock = threading.Lock()
_live: set[subprocess.Popen] = set()     # runs in flight, for stop_all()


def _allocate_uid() -> int:
    """A fresh unprivileged uid per run, so RLIMIT_NPROC counts this run's processes only and
    no two concurrent runs can read each other's files."""
    with _uid_lock:
        while True:
            uid = 200_000 + secrets.randbelow(1_000_000_000)
            if uid not in _active_uids:
                _active_uids.add(uid)
                return uid


def stop_all() -> None:
    """Kill every run in flight (each returns at once as failed). For Ctrl-C: the runs
    live in their own sessions, so the terminal's SIGINT never reaches them."""
    with _uid_lock:
        running = list(_live)
    for proc in running:
        _kill_group(proc)


def _release_uid(uid: Optional[int]) -> None:
    with _uid_lock:
        _active_uids.discard(uid)


@functools.lru_cache(maxsize=1)
def isolation_level() -> str:
    """The strongest level that works here, probed once with a real run:
    "namespaces" (root: own uid per run, network/mount/pid namespaces), "userns" (an ordinary
    user: the same namespaces inside a user namespace, capabilities dropped), or "basic"
    (rlimits, own session, audit-hook network block). AGENTMODES_SANDBOX_ISOLATION forces one."""
    forced = os.environ.get("AGENTMODES_SANDBOX_ISOLATION", "").strip()
    if forced:
        if forced not in LEVELS:
            raise SandboxError(f"AGENTMODES_SANDBOX_ISOLATION must be one of {', '.join(LEVELS)}, "
                               f"not {forced!r}")
        return forced
    candidates = ("namespaces", "userns") if os.geteuid() == 0 else ("userns",)
    for level in candidates:
        probe = _run("import json, socket, collections", SandboxLimits(timeout_s=10), None,
                     level, {})
        if probe.passed:
            return level
    return "basic"


def run_python(code: str, *, timeout_s: float = 10.0, memory_mb: int = 1024,
               max_procs: int = 64, stdin: Optional[str] = None,
               max_output_bytes: int = 64_000, files: Optional[dict[str, str]] = None,
               limits: Optional[SandboxLimits] = None,
               isolation: Optional[str] = None) -> SandboxResult:
    """Run `code` as a Python program in a fresh sandbox and report what happened.

    A failing, hanging or hostile program never raises here: it comes back as a
    SandboxResult with passed=False. `files` are extra files (name -> text) put next to the
    program. `limits` overrides the keyword limits as a whole.
    """
    limits = limits or SandboxLimits(timeout_s=timeout_s, memory_mb=memory_mb,
                                     max_procs=max_procs, max_output_bytes=max_output_bytes)
    level = isolation or isolation_level()
    if level not in LEVELS:
        raise SandboxError(f"unknown sandbox isolation {level!r}; use one of {', '.join(LEVELS)}")
    result = _run(code, limits, stdin, level, files or {})
    if result.exit_code == SETUP_FAILED and "agentmodes-sandbox: setup failed" in result.stderr:
        raise SandboxError(result.stderr.strip().splitlines()[-1])
    return result


def _prepare_dir(code: str, stdin: Optional[str], files: dict[str, str],
                 uid: Optional[int]) -> str:
    workdir = tempfile.mkdtemp(prefix="agentmodes-sbx-")
    for name, text in {PROGRAM: code, **files}.items():
        target = Path(workdir, name).resolve()
        if Path(workdir) not in target.parents:
            raise SandboxError(f"sandbox file name {name!r} leaves the sandbox directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if stdin is not None:
        Path(workdir, ".stdin").write_text(stdin, encoding="utf-8")
    if uid is not None:
        for root, dirs, names in os.walk(workdir):
            for entry in [root, *(os.path.join(root, n) for n in dirs + names)]:
                os.chown(entry, uid, uid)
    return workdir


def _run(code: str, limits: SandboxLimits, stdin: Optional[str], level: str,
         files: dict[str, str]) -> SandboxResult:
    uid = _allocate_uid() if level == "namespaces" else None
    workdir = _prepare_dir(code, stdin, files, uid)
    config = {"workdir": workdir, "program": PROGRAM, "level": level,
              "uid": uid, "expose": [os.path.realpath(sys.base_prefix)],
              "memory_mb": limits.memory_mb, "cpu_s": limits.cpu_seconds(),
              "max_procs": limits.max_procs, "max_file_mb": limits.max_file_mb,
              "max_open_files": limits.max_open_files, "shm_mb": SHM_MB}
    # marshal, not json: the child decodes it without importing anything (same interpreter).
    argv = [sandbox_interpreter(), "-I", "-S", "-X", "utf8", "-B", CHILD,
            marshal.dumps(config).hex()]
    started = time.monotonic()
    try:
        with open(Path(workdir, ".stdin") if stdin is not None else os.devnull, "rb") as stdin_f:
            proc = subprocess.Popen(argv, stdin=stdin_f, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=workdir, env=CLEAN_ENV,
                                    start_new_session=True, close_fds=True)
        with _uid_lock:
            _live.add(proc)
        try:
            out, err, truncated, timed_out = _collect(proc, limits, started)
            code_ = proc.wait()
        finally:
            with _uid_lock:
                _live.discard(proc)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        _release_uid(uid)
    duration = time.monotonic() - started
    reason = "timeout" if timed_out else _killed_reason(code_)
    return SandboxResult(passed=code_ == 0 and not timed_out, exit_code=code_,
                         stdout=_decode(out, truncated[0]), stderr=_decode(err, truncated[1]),
                         timed_out=timed_out, killed_reason=reason, duration_s=round(duration, 4),
                         truncated=any(truncated), isolation=level)


def _collect(proc: subprocess.Popen, limits: SandboxLimits,
             started: float) -> tuple[bytes, bytes, list[bool], bool]:
    """Read both pipes until EOF or the deadline, keeping at most max_output_bytes of each
    (the rest is read and dropped so the program never blocks on a full pipe)."""
    keep = limits.max_output_bytes
    buffers = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = {proc.stdout: False, proc.stderr: False}
    deadline = started + limits.timeout_s
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for stream in buffers:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if timed_out:       # killed a second ago and pipes still open: give up on them
                    break
                timed_out = True
                _kill_group(proc)
                deadline = time.monotonic() + 1.0
                continue
            for key, _ in selector.select(timeout=remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = buffers[key.fileobj]
                room = keep - len(buffer)
                if len(chunk) > room:
                    truncated[key.fileobj] = True
                buffer += chunk[:max(room, 0)]
    if timed_out:
        _kill_group(proc)
    for stream in buffers:
        stream.close()
    return (bytes(buffers[proc.stdout]), bytes(buffers[proc.stderr]),
            [truncated[proc.stdout], truncated[proc.stderr]], timed_out)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # session leader's pid == its process group id
    except ProcessLookupError:
        pass


def _killed_reason(returncode: int) -> Optional[str]:
    if returncode >= 0:
        return None
    sig = -returncode
    if sig in _SIGNAL_REASONS:
        return _SIGNAL_REASONS[sig]
    try:
        return f"signal {signal.Signals(sig).name}"
    except ValueError:
        return f"signal {sig}"


def _decode(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + "\n[... output truncated ...]" if truncated else text
