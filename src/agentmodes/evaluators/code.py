"""Code evaluators: run a candidate program against tests in the sandbox.

Two kinds, as in the Reflexion paper's programming setup:
- ReferenceTests: the benchmark's own tests (HumanEval `check(entry_point)`, MBPP asserts).
  They only *score* a final answer; a loop must not show them to the model.
- SelfTests (evaluators/unit_tests.py): assert lines the model wrote itself; they *guide*
  the loop with per-test feedback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..tools.sandbox import SandboxLimits, SandboxResult, run_python
from .base import Evaluation

def scoring_limits(cpu_seconds: float = 10.0) -> SandboxLimits:
    """Limits for scoring: CPU time decides, the wall clock is only a backstop (3x + 5 s).

    On a shared 2-core machine a correct but slow solution (MBPP/123's reference takes
    2.5 s of CPU) missed a 10 s wall-clock deadline under load; a CPU-time limit gives every
    program the same budget however busy the machine is, and still ends endless loops.
    The wall clock catches programs that sleep or block instead of computing."""
    cpu = max(1, round(cpu_seconds))
    return SandboxLimits(timeout_s=3 * cpu_seconds + 5, cpu_s=cpu, memory_mb=1024, max_procs=32)


SCORING_LIMITS = scoring_limits()
FEEDBACK_LINES = 12


@dataclass(frozen=True, slots=True)
class CodeTask:
    """One programming problem. kind "humaneval": candidate = completion appended to
    `prompt` (a full re-definition of the function works too, since the prompt ends in a
    complete stub); kind "mbpp": candidate = the whole code, `prompt` is the description."""

    task_id: str
    kind: str                          # "humaneval" | "mbpp"
    prompt: str
    entry_point: str = ""
    test: str = ""                     # HumanEval: defines check(candidate)
    test_list: tuple[str, ...] = ()    # MBPP: assert lines
    test_imports: tuple[str, ...] = ()  # MBPP: imports the asserts need
    reference: str = ""                # canonical solution (HumanEval: body; MBPP: code)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def candidate_source(self, candidate: str) -> str:
        """The candidate as a runnable module (without any tests)."""
        if self.kind == "humaneval":
            return self.prompt + candidate
        return "\n".join(self.test_imports) + ("\n" if self.test_imports else "") + candidate


def reference_program(task: CodeTask, candidate: str) -> str:
    """The program whose exit status decides pass/fail, built the standard way:
    HumanEval: prompt + completion + test + check(entry_point); MBPP: imports + code + asserts."""
    source = task.candidate_source(candidate)
    if task.kind == "humaneval":
        return f"{source}\n\n{task.test}\n\ncheck({task.entry_point})\n"
    if task.kind == "mbpp":
        return source + "\n\n" + "\n".join(task.test_list) + "\n"
    raise ValueError(f"unknown code task kind {task.kind!r}")


def sandbox_feedback(result: SandboxResult, max_lines: int = FEEDBACK_LINES) -> str:
    """What went wrong, in a few lines a model (or a person) can read."""
    if result.passed:
        return "All tests passed."
    lines = [f"The program {result.summary()}."]
    tail = [line for line in result.stderr.strip().splitlines() if line.strip()][-max_lines:]
    if tail:
        lines.append("\n".join(tail))
    return "\n".join(lines)


class ReferenceTests:
    """Evaluator: run the task's own tests. Reads task.kind/prompt/test/entry_point/test_list."""

    def __init__(self, limits: Optional[SandboxLimits] = None) -> None:
        self.limits = limits or SCORING_LIMITS

    def __call__(self, task: CodeTask, candidate: str) -> Evaluation:
        result = run_python(reference_program(task, candidate), limits=self.limits)
        return Evaluation(
            passed=result.passed,
            score=1.0 if result.passed else 0.0,
            feedback=sandbox_feedback(result),
            details={"task_id": task.task_id, "exit_code": result.exit_code,
                     "timed_out": result.timed_out, "killed_reason": result.killed_reason,
                     "duration_s": result.duration_s,
                     "stderr_tail": "\n".join(result.stderr.strip().splitlines()[-5:])},
        )
