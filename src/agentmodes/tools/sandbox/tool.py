"""`python[code]`: the sandbox as an agent tool (pass it as an extra tool to build_tools).

A failing or hostile program is an observation the model can read, never an exception.
"""

from __future__ import annotations

import re
from typing import Optional

from ..base import ToolResult
from .limits import SandboxLimits
from .runner import run_python

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_+-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
OBSERVATION_CHARS = 4_000   # what the model sees of each stream


class PythonTool:
    name = "python"
    parameter = "code"
    description = "Run Python code in a sandbox (no network, no files outside its folder) " \
                  "and see what it prints"
    description_de = "Python-Code in einer Sandbox ausführen (kein Netz, keine Dateien " \
                     "außerhalb ihres Ordners) und die Ausgabe sehen"

    def __init__(self, limits: Optional[SandboxLimits] = None) -> None:
        self.limits = limits or SandboxLimits(timeout_s=10.0, memory_mb=512, max_procs=16,
                                              max_output_bytes=OBSERVATION_CHARS)

    def __call__(self, argument: str) -> ToolResult:
        fenced = _FENCE.match(argument)
        code = fenced.group(1) if fenced else argument
        if not code.strip():
            return ToolResult("No code given: pass the Python program as the argument.",
                              error=True)
        result = run_python(code, limits=self.limits)
        parts = [f"Result: {result.summary()}"]
        if result.stdout.strip():
            parts.append("stdout:\n" + result.stdout.rstrip())
        if result.stderr.strip():
            parts.append("stderr:\n" + result.stderr.rstrip())
        return ToolResult("\n".join(parts), error=not result.passed)
