"""The sandbox's parent side: start child.py in its own session, feed it, bound its output,
hold the run to its memory budget (budget.py), kill its whole process group at the
deadline, clean up its directory and cgroups.

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
from .budget import Budget, budget_kind, new_budget
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


def isolation_level() -> str:
    """What runs here, as "LEVEL+BUDGET", probed once with a real run.

    LEVEL: "namespaces" (root: own uid per run, network/mount/pid namespaces, a new root
    holding only the Python installation and the run's own /tmp), "userns" (an ordinary
    user: the same inside a user namespace, capabilities dropped), or "basic" (rlimits, own
    session, audit-hook network block, no filesystem isolation). Every level refuses new
    user namespaces (seccomp). AGENTMODES_SANDBOX_ISOLATION forces one.
    BUDGET: how memory and processes are bounded for the whole run: "cgroup" (the kernel,
    through the run's own cgroups) or "runner" (the fallback: the runner sums the run's
    resident memory and kills it over budget; see budget.py).
    """
    return f"{_level()}+{budget_kind()}"


def _level_of(isolation: str) -> str:
    return isolation.split("+", 1)[0]


@functools.lru_cache(maxsize=1)
def _level() -> str:
    forced = os.environ.get("AGENTMODES_SANDBOX_ISOLATION", "").strip()
    if forced:
        if _level_of(forced) not in LEVELS:
            raise SandboxError(f"AGENTMODES_SANDBOX_ISOLATION must be one of {', '.join(LEVELS)}, "
                               f"not {forced!r}")
        return _level_of(forced)
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
    level = _level_of(isolation or _level())
    if level not in LEVELS:
        raise SandboxError(f"unknown sandbox isolation {level!r}; use one of {', '.join(LEVELS)}")
    result = _run(code, limits, stdin, level, files or {})
    if result.exit_code == SETUP_FAILED and "agentmodes-sandbox: setup failed" in result.stderr:
        raise SandboxError(result.stderr.strip().splitlines()[-1])
    return result


def _prepare_dir(code: str, stdin: Optional[str], files: dict[str, str]) -> str:
    workdir = tempfile.mkdtemp(prefix="agentmodes-sbx-")
    for name, text in {PROGRAM: code, **files}.items():
        target = Path(workdir, name).resolve()
        if Path(workdir) not in target.parents:
            raise SandboxError(f"sandbox file name {name!r} leaves the sandbox directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if stdin is not None:
        Path(workdir, ".stdin").write_text(stdin, encoding="utf-8")
    return workdir


def _run(code: str, limits: SandboxLimits, stdin: Optional[str], level: str,
         files: dict[str, str]) -> SandboxResult:
    uid = _allocate_uid() if level == "namespaces" else None
    workdir = _prepare_dir(code, stdin, files)
    budget = new_budget(limits.memory_mb, limits.max_procs)
    # In the new root the program sees only these, read-only (plus system libraries).
    expose = sorted({os.path.realpath(sys.base_prefix),
                     os.path.dirname(sandbox_interpreter())})
    config = {"workdir": workdir, "program": PROGRAM, "level": level,
              "uid": uid, "expose": expose, "cgroups": [str(c) for c in budget.cgroups],
              "memory_mb": limits.memory_mb, "cpu_s": limits.cpu_seconds(),
              "max_procs": limits.max_procs, "max_file_mb": limits.max_file_mb,
              "max_open_files": limits.max_open_files, "shm_mb": SHM_MB,
              "tmp_mb": limits.tmp_mb}
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
            out, err, truncated, timed_out, over = _collect(
                proc, limits, started, budget, _members(proc, level, uid))
            code_ = proc.wait()
            if budget.out_of_memory():
                over = f"memory limit ({limits.memory_mb} MB for the whole run)"
        finally:
            with _uid_lock:
                _live.discard(proc)
    finally:
        budget.close()
        shutil.rmtree(workdir, ignore_errors=True)
        _release_uid(uid)
    duration = time.monotonic() - started
    reason = "timeout" if timed_out else over or _killed_reason(code_)
    return SandboxResult(passed=code_ == 0 and not timed_out and not over, exit_code=code_,
                         stdout=_decode(out, truncated[0]), stderr=_decode(err, truncated[1]),
                         timed_out=timed_out, killed_reason=reason, duration_s=round(duration, 4),
                         truncated=any(truncated), isolation=f"{level}+{budget.kind}")


def _collect(proc: subprocess.Popen, limits: SandboxLimits, started: float, budget: Budget,
             members) -> tuple[bytes, bytes, list[bool], bool, Optional[str]]:
    """Read both pipes until EOF or the deadline, keeping at most max_output_bytes of each
    (the rest is read and dropped so the program never blocks on a full pipe). With the
    runner's budget, the run is also killed once its processes hold too much memory."""
    keep = limits.max_output_bytes
    buffers = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = {proc.stdout: False, proc.stderr: False}
    deadline = started + limits.timeout_s
    timed_out = False
    over: Optional[str] = None
    watch = budget.kind == "runner"
    with selectors.DefaultSelector() as selector:
        for stream in buffers:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if watch and over is None and (over := budget.exceeded(members)):
                _kill_group(proc)
                deadline = time.monotonic() + 1.0
            if remaining <= 0:
                if timed_out:       # killed a second ago and pipes still open: give up on them
                    break
                timed_out = True
                _kill_group(proc)
                deadline = time.monotonic() + 1.0
                continue
            for key, _ in selector.select(timeout=min(remaining, 0.05) if watch else remaining):
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
            [truncated[proc.stdout], truncated[proc.stderr]], timed_out, over)


def _members(proc: subprocess.Popen, level: str, uid: Optional[int]):
    """A function listing the run's processes, for the runner's memory watch: by the run's
    own uid (namespaces), its pid namespace (userns), or its session (basic)."""
    namespace: list[Optional[str]] = []

    def pid_namespace() -> Optional[str]:
        if not namespace:
            try:
                kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
                namespace.append(os.readlink(f"/proc/{kids[0]}/ns/pid") if kids else None)
            except (OSError, IndexError):
                return None
        return namespace[0]

    def members() -> list[int]:
        found = []
        wanted = pid_namespace() if level == "userns" else None
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                if level == "namespaces":
                    hit = entry.stat().st_uid == uid
                elif wanted is not None:
                    hit = os.readlink(f"/proc/{entry.name}/ns/pid") == wanted
                else:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                    hit = int(stat.rsplit(")", 1)[1].split()[3]) == proc.pid
            except (OSError, ValueError, IndexError):
                continue
            if hit:
                found.append(int(entry.name))
        return found
    return members


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
