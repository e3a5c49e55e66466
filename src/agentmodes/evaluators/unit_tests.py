"""Self-generated unit tests (Reflexion's programming evaluator).

The model writes `assert f(x) == y` lines for the function it is about to implement; the
candidate runs against them in the sandbox and the per-test result becomes the feedback text
of the self-reflection step ("Tests failed: assert f(2) == 3 # output: 4"). One sandbox run
covers all tests: each test has its own timer inside the run, so one endless test fails
alone, and the candidate's own prints are discarded so they cannot crowd out the report.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..tools.sandbox import SandboxLimits, run_python
from .base import Evaluation
from .code import sandbox_feedback

MARKER = "@@agentmodes-unit-tests@@"
MAX_REPR = 200

_HARNESS = r'''
import ast, json, os, signal, sys, traceback

MARKER = %(marker)r
PER_TEST_S = %(per_test_s)r
MAX_REPR = %(max_repr)r


def _on_alarm(signum, frame):
    raise TimeoutError(f"took longer than {PER_TEST_S} s")


def _timed(fn):
    signal.setitimer(signal.ITIMER_REAL, PER_TEST_S)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _actual(test, ns):
    """For `assert LHS == RHS`, what LHS really gives (the paper's '# output: ...')."""
    try:
        node = ast.parse(test).body[0]
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            code = compile(ast.Expression(node.test.left), "<test>", "eval")
            return repr(_timed(lambda: eval(code, ns)))[:MAX_REPR]
    except BaseException as err:
        return f"{type(err).__name__}: {err}"[:MAX_REPR]
    return None


def _error(err):
    return "".join(traceback.format_exception_only(type(err), err)).strip()[:MAX_REPR]


def main():
    signal.signal(signal.SIGALRM, _on_alarm)
    report = sys.stdout
    sys.stdout = open(os.devnull, "w")
    tests = json.load(open("tests.json", encoding="utf-8"))
    ns = {"__name__": "candidate"}
    result = {"load_error": None, "tests": []}
    try:
        source = open("candidate.py", encoding="utf-8").read()
        _timed(lambda: exec(compile(source, "candidate.py", "exec"), ns))
    except BaseException as err:
        result["load_error"] = _error(err)
    if result["load_error"] is None:
        for test in tests:
            entry = {"test": test, "passed": False, "output": None, "error": None}
            try:
                _timed(lambda: exec(compile(test, "<test>", "exec"), ns))
                entry["passed"] = True
            except AssertionError as err:
                entry["error"] = _error(err)
                entry["output"] = _actual(test, ns)
            except BaseException as err:
                entry["error"] = _error(err)
            result["tests"].append(entry)
    report.write("\n" + MARKER + json.dumps(result) + "\n")
    report.flush()


main()
'''


@dataclass(slots=True)
class TestOutcome:
    test: str
    passed: bool
    output: Optional[str] = None       # what the tested expression gave, for a failed ==
    error: Optional[str] = None

    def line(self) -> str:
        if self.passed:
            return self.test
        note = f"output: {self.output}" if self.output is not None else f"error: {self.error}"
        return f"{self.test} # {note}"


@dataclass(slots=True)
class UnitTestReport:
    outcomes: list[TestOutcome] = field(default_factory=list)
    load_error: Optional[str] = None   # the candidate itself did not run (syntax error, ...)
    sandbox_error: Optional[str] = None  # the whole run died (memory, time): no per-test data

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.passed for o in self.outcomes)

    @property
    def score(self) -> float:
        return sum(o.passed for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    def feedback(self) -> str:
        """The paper's format: passed tests, then failed tests with what they gave."""
        if self.sandbox_error:
            return self.sandbox_error
        if self.load_error:
            return f"The code did not run: {self.load_error}"
        good = [o.line() for o in self.outcomes if o.passed]
        bad = [o.line() for o in self.outcomes if not o.passed]
        return "\n".join(["Tests passed:", *good, "", "Tests failed:", *bad]).strip()


def parse_test_lines(text: str, entry_point: str = "", limit: Optional[int] = None) -> list[str]:
    """The usable `assert ...` lines in a model's reply (fences, prose and broken lines
    dropped, duplicates removed); with entry_point, only asserts that call it."""
    tests: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("assert ") or line in tests:
            continue
        if entry_point and not re.search(rf"\b{re.escape(entry_point)}\s*\(", line):
            continue
        try:
            node = ast.parse(line)
        except SyntaxError:
            continue
        if len(node.body) == 1 and isinstance(node.body[0], ast.Assert):
            tests.append(line)
    return tests[:limit] if limit else tests


def run_unit_tests(source: str, tests: Sequence[str], *, per_test_s: float = 3.0,
                   limits: Optional[SandboxLimits] = None) -> UnitTestReport:
    """Run `tests` (assert lines) against the module `source` in one sandbox run."""
    tests = list(tests)
    if not tests:
        return UnitTestReport()
    timeout = min(per_test_s * (2 * len(tests) + 1) + 2.0, 120.0)
    limits = limits or SandboxLimits(timeout_s=timeout, memory_mb=1024, max_procs=32)
    harness = _HARNESS % {"marker": MARKER, "per_test_s": float(per_test_s), "max_repr": MAX_REPR}
    result = run_python(harness, limits=limits,
                        files={"candidate.py": source, "tests.json": json.dumps(tests)})
    payload = _report_payload(result.stdout)
    if payload is None:
        return UnitTestReport(outcomes=[TestOutcome(t, False, error="not run") for t in tests],
                              sandbox_error=sandbox_feedback(result))
    outcomes = [TestOutcome(e["test"], e["passed"], e.get("output"), e.get("error"))
                for e in payload["tests"]]
    if payload["load_error"]:
        outcomes = [TestOutcome(t, False, error=payload["load_error"]) for t in tests]
    return UnitTestReport(outcomes=outcomes, load_error=payload["load_error"])


def _report_payload(stdout: str) -> Optional[dict[str, Any]]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    return None


class SelfTests:
    """Evaluator over model-written tests. The candidate is completed by the task when the
    task knows how (CodeTask.candidate_source: HumanEval prompt + completion), else run as is."""

    def __init__(self, tests: Sequence[str], *, per_test_s: float = 3.0,
                 limits: Optional[SandboxLimits] = None) -> None:
        self.tests = list(tests)
        self.per_test_s = per_test_s
        self.limits = limits

    def __call__(self, task: Any, candidate: str) -> Evaluation:
        source = task.candidate_source(candidate) if hasattr(task, "candidate_source") \
            else candidate
        if not self.tests:
            return Evaluation(False, 0.0, "No valid unit tests were given, so the code "
                                          "could not be checked.", {"tests": []})
        report = run_unit_tests(source, self.tests, per_test_s=self.per_test_s,
                                limits=self.limits)
        return Evaluation(
            passed=report.passed, score=report.score, feedback=report.feedback(),
            details={"tests": [{"test": o.test, "passed": o.passed, "output": o.output,
                                "error": o.error} for o in report.outcomes],
                     "load_error": report.load_error, "sandbox_error": report.sandbox_error},
        )
