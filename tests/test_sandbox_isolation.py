"""Issue 11, items 4, 7 and 10 (sandbox): one budget for the whole run, a sandbox that sees
only its own folder, a size-limited /tmp, and no nested user namespaces.

Replays: `run_python(memory_mb=...)` forking children that each stay under the
per-process limit but together take far more; reading a knowledge base and the chat
database from inside; filling /tmp; creating a user namespace with every capability in it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentmodes.tools.sandbox import SandboxLimits, isolation_level, run_python

LEVEL = isolation_level()
NAMESPACED = not LEVEL.startswith("basic")
needs_namespaces = pytest.mark.skipif(not NAMESPACED, reason=f"isolation here is {LEVEL}")

FORK_AND_FILL = """
import os, sys, time
children = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(b"x") * (200 * 1024 * 1024)     # written, so really resident
        print("allocated", i, flush=True)
        time.sleep(3)
        os._exit(0)
    children.append(pid)
failed = 0
for pid in children:
    _, status = os.waitpid(pid, 0)
    failed += status != 0
print("children failed:", failed)
sys.exit(1 if failed else 0)
"""


def _budget():
    from agentmodes.tools.sandbox import budget
    return budget


@pytest.fixture(params=["cgroup", "runner"])
def budget_kind(request, monkeypatch):
    budget_module = _budget()
    if request.param == "cgroup" and budget_module.budget_kind() != "cgroup":
        pytest.skip("no cgroup can be made here (the runner's budget is what runs)")
    monkeypatch.setenv("AGENTMODES_SANDBOX_BUDGET", request.param)
    budget_module.budget_kind.cache_clear()
    yield request.param
    budget_module.budget_kind.cache_clear()


def test_forked_children_share_one_memory_budget():
    """The attack as it was: each child under the per-process limit, all of them over."""
    result = run_python(FORK_AND_FILL, limits=SandboxLimits(timeout_s=20, memory_mb=300))
    assert not result.passed and result.stdout.count("allocated") <= 1


def test_memory_is_one_budget_for_the_whole_run(budget_kind):
    # Each child (~230 MB) is under the 300 MB per-process limit; four of them are not.
    result = run_python(FORK_AND_FILL, limits=SandboxLimits(timeout_s=20, memory_mb=300))
    assert not result.passed
    assert result.stdout.count("allocated") <= 1
    assert "memory limit" in (result.killed_reason or "") or "children failed" in result.stdout
    assert result.isolation.endswith("+" + budget_kind)
    assert run_python("print('next')").passed


def test_one_child_within_the_budget_still_runs(budget_kind):
    code = FORK_AND_FILL.replace("range(4)", "range(1)")
    result = run_python(code, limits=SandboxLimits(timeout_s=20, memory_mb=400))
    assert result.passed, result.stderr
    assert result.stdout.count("allocated") == 1


def test_isolation_level_names_the_budget():
    level, _, budget = LEVEL.partition("+")
    assert level in ("namespaces", "userns", "basic") and budget in ("cgroup", "runner")


@needs_namespaces
def test_the_sandbox_sees_only_its_folder_and_the_python_installation(tmp_path):
    kb = tmp_path / "kb.db"
    kb.write_text("chunk text of a private document")
    kb.chmod(0o644)                      # world-readable, as KBs used to be created
    secrets = [str(kb), str(Path(__file__).resolve()), "/etc/passwd", "/etc/hostname",
               "/var/tmp", "/run", str(Path.cwd())]
    code = (
        "import os, json, sqlite3, ssl, ctypes, decimal, tempfile\n"   # stdlib still works
        f"for path in {secrets!r}:\n"
        "    try:\n"
        "        print('READ', path, open(path).read(40) if os.path.isfile(path) else\n"
        "              os.listdir(path))\n"
        "    except OSError as err:\n"
        "        print('hidden', path, type(err).__name__)\n"
        "print('ROOT', sorted(os.listdir('/')))\n"
        f"print('HOME', sorted(os.listdir({str(Path.home())!r})) if os.path.isdir("
        f"{str(Path.home())!r}) else [])\n"
        "open('out.txt', 'w').write('mine'); print('own folder', sorted(os.listdir('.')))\n")
    result = run_python(code)
    assert result.passed, result.stderr
    assert "READ" not in result.stdout, result.stdout
    root = eval(result.stdout.split("ROOT ", 1)[1].splitlines()[0])
    assert set(root) <= {"dev", "etc", "lib", "lib32", "lib64", "proc", "tmp", "usr", "root",
                         "opt", "home"}, root
    # Of a home folder, at most the way to the Python installation (pyenv keeps it there).
    home = eval(result.stdout.split("HOME ", 1)[1].splitlines()[0])
    on_the_way = Path(sys.base_prefix).resolve().parts
    assert all(name in on_the_way for name in home), home
    assert "own folder ['main.py', 'out.txt']" in result.stdout


@needs_namespaces
def test_tmp_is_size_limited():
    code = ("import os\nwritten = 0\n"
            "try:\n"
            "    for i in range(20):\n"
            "        with open(f'/tmp/fill{i}', 'wb') as f:\n"
            "            f.write(b'x' * (32 * 1024 * 1024))\n"
            "        written += 32\n"
            "except OSError as err:\n"
            "    print('stopped after', written, 'MB:', err.strerror)\n")
    result = run_python(code, limits=SandboxLimits(timeout_s=20, memory_mb=1024))
    assert "stopped after" in result.stdout, result.stdout + result.stderr
    assert int(result.stdout.split()[2]) <= SandboxLimits().tmp_mb


@pytest.mark.parametrize("isolation", ["namespaces", "basic"])
def test_no_new_user_namespace_with_capabilities(isolation):
    if isolation == "namespaces" and not NAMESPACED:
        pytest.skip(f"isolation here is {LEVEL}")
    code = ("import ctypes, os, subprocess, sys, threading\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "CLONE_NEWUSER = 0x10000000\n"
            "ret = libc.unshare(CLONE_NEWUSER)\n"
            "print('unshare', ret, os.strerror(ctypes.get_errno()) if ret else 'ALLOWED')\n"
            "t = threading.Thread(target=print, args=('thread ok',)); t.start(); t.join()\n"
            "print(subprocess.run([sys.executable, '-c', 'print(2)'], capture_output=True,\n"
            "                     text=True).stdout.strip(), 'from a child')\n")
    result = run_python(code, isolation=isolation)
    assert result.passed, result.stderr
    assert "unshare -1 Operation not permitted" in result.stdout, result.stdout
    assert "thread ok" in result.stdout and "2 from a child" in result.stdout


def test_no_cgroup_is_left_behind():
    budget_module = _budget()
    if budget_module.budget_kind() != "cgroup":
        pytest.skip("no cgroups here")
    before = _sandbox_cgroups()
    for _ in range(3):
        run_python("import os\nif os.fork() == 0:\n    import time; time.sleep(30)\n")
    assert _sandbox_cgroups() == before


def _sandbox_cgroups() -> set[str]:
    found = set()
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        found.update(os.path.join(root, d) for d in dirs if d.startswith("agentmodes-sbx-"))
        dirs[:] = [d for d in dirs if not d.startswith("agentmodes-sbx-")]
    return found
