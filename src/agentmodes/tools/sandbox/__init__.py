"""Run model-written Python in a throw-away sandbox: own process tree, limits, no network.

    from agentmodes.tools.sandbox import run_python
    result = run_python("print(1 + 1)", timeout_s=5)
    result.passed, result.stdout, result.killed_reason

How it is isolated depends on the machine; `isolation_level()` says what runs, as
"LEVEL+BUDGET": LEVEL "namespaces" (as root: own uid per run, network/mount/pid namespaces,
a new root with only the Python installation and the run's own /tmp), "userns" (the same
for an ordinary user) or "basic" (rlimits, own session, an audit hook against sockets);
BUDGET "cgroup" (one memory and process budget for the whole run, kept by the kernel) or
"runner" (the fallback: the runner watches the run's total memory). See child.py and
budget.py for the details.
"""

from .limits import SandboxLimits, SandboxResult
from .runner import SandboxError, isolation_level, run_python, stop_all
from .tool import PythonTool

__all__ = ["PythonTool", "SandboxError", "SandboxLimits", "SandboxResult", "isolation_level",
           "run_python", "stop_all"]
