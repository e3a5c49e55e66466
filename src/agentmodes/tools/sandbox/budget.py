"""One memory and process budget for a whole sandbox run, not per process.

RLIMIT_AS and RLIMIT_NPROC bound each process: a program that forks 8 children of 900 MB
stays under a 1 GB per-process limit and takes 7 GB of the host. So each run also gets a
budget for all of its processes together, enforced one of two ways:

- "cgroup": a memory cgroup (memory.max / memory.limit_in_bytes, swap included, tmpfs
  pages of its /tmp and /dev/shm included) and a pids cgroup (pids.max) of its own, made
  under the runner's own cgroup on cgroup v2 or v1, joined by child.py before anything
  else runs. The kernel enforces it: at the limit the run's largest process is OOM-killed.
- "runner": where no cgroup can be made (an ordinary user without a delegated cgroup, a
  container without write access), the runner sums the resident memory of the run's
  processes every 50 ms and kills the whole run when the total passes the budget. The
  process count stays bounded by RLIMIT_NPROC. Coarser: memory allocated between two
  looks can overshoot briefly, and in "basic" isolation a process that leaves the run's
  session (setsid, double fork) is no longer counted.

AGENTMODES_SANDBOX_BUDGET=runner forces the second way (to test it, or where cgroups
misbehave).
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Optional

MB = 1024 * 1024
CHECK_EVERY_S = 0.05
KINDS = ("cgroup", "runner")


def _mounts() -> dict[str, str]:
    """controller ("memory", "pids") or "unified" -> mount point of its hierarchy."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or not extra:
            continue
        point = fields[4].replace("\\040", " ")
        if extra[0] == "cgroup2":
            found.setdefault("unified", point)
        elif extra[0] == "cgroup" and len(extra) >= 3:
            for controller in ("memory", "pids"):
                if controller in extra[2].split(","):
                    found.setdefault(controller, point)
    return found


def _own_paths() -> dict[str, str]:
    """controller or "unified" -> this process's cgroup path inside that hierarchy."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["unified"]:
            paths[name] = path
    return paths


def _parent(mount: str, own: str) -> Path:
    """Where to make the run's cgroup: under our own, if visible (a cgroup namespace may
    show us at the root), else under the hierarchy's root."""
    mine = Path(mount) / own.lstrip("/")
    return mine if mine.is_dir() else Path(mount)


class Budget:
    """The budget of one run: its cgroup folders (to join), or the runner's own watch."""

    def __init__(self, memory_mb: int, max_procs: int):
        self.memory_bytes = memory_mb * MB
        self.max_procs = max_procs
        self.cgroups: list[Path] = []
        self.kind = "runner"
        self._next_check = 0.0

    # cgroup -------------------------------------------------------------------------
    def make_cgroups(self) -> bool:
        """Create the run's memory and pids cgroups; False (and nothing left) if we cannot."""
        mounts, own = _mounts(), _own_paths()
        name = f"agentmodes-sbx-{secrets.token_hex(6)}"
        try:
            for controller in ("memory", "pids"):
                if controller in mounts:              # cgroup v1: one hierarchy each
                    folder = _parent(mounts[controller], own.get(controller, "/")) / name
                    folder.mkdir()
                    self.cgroups.append(folder)
                    self._limit_v1(folder, controller)
                elif "unified" in mounts:
                    parent = _parent(mounts["unified"], own.get("unified", "/"))
                    if controller not in (parent / "cgroup.subtree_control").read_text().split():
                        raise OSError(f"cgroup v2 controller {controller} not delegated")
                    folder = parent / name
                    if folder not in self.cgroups:
                        folder.mkdir()
                        self.cgroups.append(folder)
                    self._limit_v2(folder, controller)
                else:
                    raise OSError(f"no cgroup hierarchy with {controller}")
        except OSError:
            self.close()
            return False
        self.kind = "cgroup"
        return True

    def _limit_v1(self, folder: Path, controller: str) -> None:
        if controller == "memory":
            (folder / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
            swap = folder / "memory.memsw.limit_in_bytes"
            if swap.exists():                          # only with swap accounting
                swap.write_text(str(self.memory_bytes))
        else:
            # +2: the run's two helper processes (the status mirror and pid 1) count too.
            (folder / "pids.max").write_text(str(self.max_procs + 2))

    def _limit_v2(self, folder: Path, controller: str) -> None:
        if controller == "memory":
            (folder / "memory.max").write_text(str(self.memory_bytes))
            swap = folder / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        else:
            (folder / "pids.max").write_text(str(self.max_procs + 2))

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the run at the memory limit."""
        for folder in self.cgroups:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    text = (folder / name).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                        return True
        return False

    def close(self) -> None:
        """Remove the cgroups once their processes are gone (killing stragglers)."""
        for folder in reversed(self.cgroups):
            deadline = time.monotonic() + 5
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    for pid in _pids_in(folder):
                        _kill(pid)
                    time.sleep(0.02)
        self.cgroups = []

    # runner -------------------------------------------------------------------------
    def exceeded(self, members) -> Optional[str]:
        """For the "runner" kind: the reason to stop the run, if its processes (pids from
        `members()`) hold more memory than the budget. Looks at most every 50 ms."""
        if self.kind != "runner":
            return None
        now = time.monotonic()
        if now < self._next_check:
            return None
        self._next_check = now + CHECK_EVERY_S
        if sum(_resident(pid) for pid in members()) > self.memory_bytes:
            return f"memory limit ({self.memory_bytes // MB} MB for the whole run)"
        return None


def _pids_in(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


@functools.lru_cache(maxsize=1)
def budget_kind() -> str:
    """"cgroup" if this process can make a run's cgroups, else "runner" (probed once)."""
    forced = os.environ.get("AGENTMODES_SANDBOX_BUDGET", "").strip()
    if forced:
        if forced not in KINDS:
            from .runner import SandboxError
            raise SandboxError(f"AGENTMODES_SANDBOX_BUDGET must be one of {', '.join(KINDS)}, "
                               f"not {forced!r}")
        return forced
    probe = Budget(64, 4)
    made = probe.make_cgroups()
    probe.close()
    return "cgroup" if made else "runner"


def new_budget(memory_mb: int, max_procs: int) -> Budget:
    budget = Budget(memory_mb, max_procs)
    if budget_kind() == "cgroup":
        budget.make_cgroups()         # falls back to the runner's watch if this one fails
    return budget
