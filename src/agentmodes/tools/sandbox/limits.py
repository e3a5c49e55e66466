"""What a sandbox run may use, and what it produced.

The limits are plain numbers so that a caller (an evaluator, a benchmark, the CLI) can pass
them through without knowing how they are enforced; runner.py and child.py enforce them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    timeout_s: float = 10.0          # wall clock; the whole process tree is killed after it
    cpu_s: Optional[int] = None      # RLIMIT_CPU per process; default: ceil(timeout_s) + 1
    memory_mb: int = 1024            # RLIMIT_AS per process, and the whole run's total (budget.py)
    max_procs: int = 64              # processes of the whole run (threads count too)
    tmp_mb: int = 128                # the run's /tmp (its folder): a tmpfs of this size
    max_file_mb: int = 64            # RLIMIT_FSIZE: no single file written bigger than this
    max_open_files: int = 256        # RLIMIT_NOFILE
    max_output_bytes: int = 64_000   # per stream; the rest is drained and dropped

    def cpu_seconds(self) -> int:
        return self.cpu_s if self.cpu_s is not None else int(self.timeout_s) + 2


@dataclass(slots=True)
class SandboxResult:
    """The outcome of one run. `passed` means: exited 0 within its limits."""

    passed: bool
    exit_code: Optional[int]         # None if it never finished; negative = killed by signal
    stdout: str
    stderr: str
    timed_out: bool
    killed_reason: Optional[str]     # "timeout", "cpu limit", "file size limit", "signal SIGSEGV", ...
    duration_s: float
    truncated: bool = False          # stdout or stderr exceeded max_output_bytes
    isolation: str = ""              # which isolation level ran it (see sandbox.isolation_level)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line for feedback text and logs."""
        if self.timed_out:
            return "timed out (wall clock)"
        if self.killed_reason:
            return f"was killed: {self.killed_reason}"
        return "passed" if self.passed else f"failed (exit code {self.exit_code})"
