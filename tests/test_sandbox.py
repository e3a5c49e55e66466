"""The sandbox against hostile programs: each is contained and reported as that run's
failure, and the next run works normally."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmodes.tools.sandbox import SandboxError, SandboxLimits, isolation_level, run_python
from agentmodes.tools.sandbox.runner import CHILD

ISOLATED = isolation_level().startswith("namespaces")
needs_namespaces = pytest.mark.skipif(not ISOLATED, reason="needs root + unshare (namespaces)")


def _sandbox_processes() -> list[int]:
    """Pids of processes still running the sandbox child (a leak if any remain)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if CHILD.encode() in cmdline:
                pids.append(int(entry.name))
    return pids


def test_normal_program_passes_with_output_and_stdin():
    result = run_python("import sys\nname = sys.stdin.read().strip()\nprint(f'hello {name}')",
                        stdin="world\n")
    assert result.passed and result.exit_code == 0
    assert result.stdout == "hello world\n"
    assert not result.timed_out and result.killed_reason is None


def test_failing_program_reports_exit_code_and_traceback():
    result = run_python("def f():\n    return 1 / 0\nf()\n")
    assert not result.passed and result.exit_code == 1
    assert "ZeroDivisionError" in result.stderr
    assert 'main.py", line 2' in result.stderr
    assert "child.py" not in result.stderr      # the sandbox's own frames are hidden


def test_sys_exit_code_is_kept():
    result = run_python("import sys\nprint('partial')\nsys.exit(3)")
    assert result.exit_code == 3 and not result.passed and result.stdout == "partial\n"


def test_endless_loop_is_killed_at_the_deadline():
    started = time.monotonic()
    result = run_python("while True:\n    pass\n", timeout_s=1.0)
    assert result.timed_out and result.killed_reason == "timeout" and not result.passed
    assert time.monotonic() - started < 5
    assert run_python("print('next')").passed


@needs_namespaces
def test_fork_bomb_is_contained_and_leaves_nothing_behind():
    bomb = ("import os\n"
            "while True:\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            os.setsid()\n"           # try to escape the process group too
            "    except OSError:\n"
            "        pass\n")
    result = run_python(bomb, timeout_s=2.0, max_procs=16)
    assert not result.passed and result.timed_out
    # Killing a few thousand forked processes takes the kernel a moment on a loaded machine;
    # a leak is a process that is still there after seconds, not after one scheduler tick.
    deadline = time.monotonic() + 10
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sandbox_processes() == []
    assert run_python("print('alive')").stdout == "alive\n"


def test_fork_count_is_limited():
    code = ("import os\nn = 0\n"
            "try:\n"
            "    for _ in range(200):\n"
            "        if os.fork() == 0:\n"
            "            import time; time.sleep(5); os._exit(0)\n"
            "        n += 1\n"
            "except OSError as err:\n"
            "    print('refused after', n, type(err).__name__)\n"
            "    raise SystemExit(1)\n")
    if not ISOLATED:
        pytest.skip("RLIMIT_NPROC is not enforced for root without a uid switch")
    result = run_python(code, timeout_s=5.0, max_procs=8)
    assert not result.passed
    refused_after = int(result.stdout.split()[2])
    assert refused_after < 8


def test_allocating_10_gb_fails_with_memory_error():
    result = run_python("data = bytearray(10 * 1024 ** 3)\nprint('allocated')",
                        memory_mb=512)
    assert not result.passed and "MemoryError" in result.stderr
    assert "allocated" not in result.stdout


@needs_namespaces
def test_writes_outside_the_run_directory_fail(tmp_path):
    targets = [Path(__file__).parent / "sandbox_escape.txt", Path("/var/tmp/sandbox_escape.txt"),
               Path("/run/lock/sandbox_escape.txt"), tmp_path / "escape.txt"]
    code = ("import sys\nfailures = 0\n"
            f"for path in {[str(t) for t in targets]!r}:\n"
            "    try:\n"
            "        open(path, 'w').write('escaped')\n"
            "        print('WROTE', path)\n"
            "    except OSError as err:\n"
            "        failures += 1\n"
            "        print('blocked', path, type(err).__name__)\n"
            "open('inside.txt', 'w').write('fine')\n"       # its own directory is writable
            "print('inside ok')\n"
            "sys.exit(1 if failures else 0)\n")
    result = run_python(code)
    assert not result.passed
    assert "WROTE" not in result.stdout and "inside ok" in result.stdout
    assert not any(t.exists() for t in targets)


@needs_namespaces
def test_dev_shm_is_private_and_multiprocessing_works():
    code = ("import multiprocessing as mp\n"
            "open('/dev/shm/sandbox_private.txt', 'w').write('x')\n"
            "with mp.Pool(2) as pool:\n"
            "    print(sum(pool.map(abs, [-1, -2, 3])))\n")
    result = run_python(code, timeout_s=20)
    assert result.passed, result.stderr
    assert result.stdout == "6\n"
    assert not Path("/dev/shm/sandbox_private.txt").exists()


@pytest.fixture
def listening_server():
    """A real TCP server on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[tuple] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except (socket.timeout, OSError):
                continue
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("isolation", ["namespaces", "basic"])
def test_network_connection_fails(listening_server, isolation):
    if isolation == "namespaces" and not ISOLATED:
        pytest.skip("needs root + unshare")
    port, accepted = listening_server
    socket.create_connection(("127.0.0.1", port), timeout=2).close()   # the server works
    deadline = time.monotonic() + 2
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(accepted) == 1
    code = ("import socket\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'x')\n"
            "print('connected')\n")
    result = run_python(code, isolation=isolation)
    assert not result.passed and "connected" not in result.stdout
    assert "Error" in result.stderr
    time.sleep(0.3)
    assert len(accepted) == 1          # nothing from the sandbox reached the server


@pytest.mark.parametrize("isolation", ["namespaces", "basic"])
def test_parent_secrets_are_not_visible(monkeypatch, isolation):
    if isolation == "namespaces" and not ISOLATED:
        pytest.skip("needs root + unshare")
    monkeypatch.setenv("AGENTMODES_FAKE_SECRET", "hunter2-very-secret")
    code = ("import os\n"
            "print(sorted(os.environ.items()))\n"
            f"for pid in ('1', str(os.getppid()), '{os.getpid()}'):\n"
            "    try:\n"
            "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
            "    except OSError as err:\n"
            "        print('no access', pid, type(err).__name__)\n")
    result = run_python(code, isolation=isolation)
    assert result.passed
    assert "hunter2" not in result.stdout + result.stderr
    assert "AGENTMODES_FAKE_SECRET" not in result.stdout
    if isolation == "namespaces":
        assert "PermissionError" in result.stdout or "FileNotFoundError" in result.stdout


def test_output_is_truncated_to_the_bound():
    result = run_python("import sys\nsys.stdout.write('x' * 1_000_000)\n"
                        "sys.stderr.write('e' * 500_000)", max_output_bytes=10_000)
    assert result.passed and result.truncated
    kept_out, marker = result.stdout.split("\n", 1)
    assert kept_out == "x" * 10_000 and "output truncated" in marker
    assert result.stderr.split("\n", 1)[0] == "e" * 10_000


def test_endless_printing_is_bounded_and_killed():
    result = run_python("while True:\n    print('spam' * 100)\n", timeout_s=1.0,
                        max_output_bytes=5_000)
    assert result.timed_out and result.truncated
    assert len(result.stdout) < 6_000


def test_hostile_runs_in_parallel_do_not_stop_the_others():
    programs = {"loop": ("while True: pass", False), "ok1": ("print(1)", True),
                "memory": ("x = bytearray(10 * 1024 ** 3)", False), "ok2": ("print(2)", True),
                "crash": ("raise ValueError('bad')", False), "ok3": ("print(3)", True)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(programs, pool.map(
            lambda code: run_python(code, timeout_s=1.5, memory_mb=512),
            [code for code, _ in programs.values()])))
    assert {name: r.passed for name, r in results.items()} == \
        {name: expected for name, (_, expected) in programs.items()}


def test_files_are_placed_next_to_the_program_and_cannot_escape():
    result = run_python("import helper\nprint(helper.VALUE, open('data.txt').read())",
                        files={"helper.py": "VALUE = 42\n", "data.txt": "payload"})
    assert result.stdout == "42 payload\n"
    with pytest.raises(SandboxError):
        run_python("print(1)", files={"../outside.py": "x = 1"})


@needs_namespaces
def test_runs_as_an_unprivileged_user_in_its_own_directory():
    code = "import os\nprint(os.getuid(), os.getcwd(), sorted(os.listdir('.')))"
    uid, cwd, listing = run_python(code).stdout.split(" ", 2)
    assert int(uid) != 0 and cwd == "/tmp" and listing.strip() == "['main.py']"
    assert os.getuid() == 0      # only the sandbox dropped privileges


def test_python_tool_turns_runs_into_observations():
    from agentmodes.tools.base import Tool
    from agentmodes.tools.sandbox import PythonTool
    tool = PythonTool()
    assert isinstance(tool, Tool)
    ok = tool("```python\nprint(sum(range(10)))\n```")
    assert not ok.error and "passed" in ok.text and "45" in ok.text
    bad = tool("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
    assert bad.error and "failed" in bad.text and "Error" in bad.text
    assert tool("   ").error


def _python_for_nobody() -> str | None:
    """An interpreter of this Python version that uid 65534 can run (pyenv under /root
    is not traversable), or None."""
    import shutil
    import sys
    candidate = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}",
                             path="/usr/bin:/usr/local/bin")
    return candidate if candidate and shutil.which("setpriv") else None


@pytest.mark.skipif(os.geteuid() != 0 or _python_for_nobody() is None,
                    reason="needs root (to become uid 65534), setpriv and a system python")
def test_ordinary_user_gets_user_namespace_isolation():
    """What a non-root user of the library gets: run the sandbox itself as uid 65534."""
    import shutil
    import tempfile
    # uid 65534 must be able to read the package; a checkout may sit below a 0700 folder,
    # so give it a world-readable copy.
    src = Path(tempfile.mkdtemp(prefix="agentmodes-nobody-"))
    src.chmod(0o755)
    shutil.copytree(Path(__file__).resolve().parents[1] / "src" / "agentmodes", src / "agentmodes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in [src, *src.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "from agentmodes.tools.sandbox import run_python, isolation_level\n"
        "probe = ('import os, socket\\n'\n"
        "         'try:\\n    open(\"/var/tmp/agentmodes_user_escape\", \"w\")\\n'\n"
        "         '    print(\"WROTE\")\\nexcept OSError as e:\\n    print(\"blocked\")\\n'\n"
        "         'socket.create_connection((\"127.0.0.1\", 22), timeout=1)\\n')\n"
        "net = run_python(probe)\n"
        "bomb = run_python('import os\\nwhile True:\\n    try:\\n        os.fork()\\n'\n"
        "                  '    except OSError:\\n        pass\\n', timeout_s=2, max_procs=8)\n"
        "print(json.dumps({'level': isolation_level(), 'net': net.as_dict(),\n"
        "                  'bomb': bomb.as_dict(), 'ok': run_python('print(7)').stdout}))\n")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           _python_for_nobody(), "-I", "-c", script],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["level"].startswith("userns+")
    assert report["net"]["stdout"] == "blocked\n" and not report["net"]["passed"]
    assert "Network is unreachable" in report["net"]["stderr"]
    assert report["bomb"]["timed_out"] and report["ok"] == "7\n"
    assert not Path("/var/tmp/agentmodes_user_escape").exists()
    shutil.rmtree(src, ignore_errors=True)


def test_a_program_killed_by_a_signal_is_reported_as_such():
    result = run_python("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('alive')")
    assert not result.passed and result.exit_code == -15
    assert result.killed_reason == "signal SIGTERM" and "alive" not in result.stdout


def test_cpu_limit_ends_a_busy_loop_before_the_wall_clock():
    result = run_python("while True:\n    pass\n",
                        limits=SandboxLimits(timeout_s=60, cpu_s=1))
    assert not result.passed and not result.timed_out
    assert result.killed_reason == "cpu limit" and result.duration_s < 30


@needs_namespaces
def test_background_processes_die_with_the_program():
    token = f"agentmodes-daemon-{os.getpid()}-{time.time_ns()}"
    code = ("import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', "
            f"'{token}'], start_new_session=True)\n"
            "print('spawned')\n")
    result = run_python(code)
    assert result.passed and result.stdout == "spawned\n"
    time.sleep(0.3)
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit()
                 and token.encode() in _read(p / "cmdline")]
    assert leftovers == []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
