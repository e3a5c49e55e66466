"""Code evaluators: the task's own tests, and model-written unit tests with per-test feedback."""

from __future__ import annotations

from agentmodes.evaluators import Evaluation, Evaluator
from agentmodes.evaluators.code import CodeTask, ReferenceTests, reference_program
from agentmodes.evaluators.unit_tests import SelfTests, parse_test_lines, run_unit_tests

ADD_TASK = CodeTask(
    task_id="Demo/0", kind="humaneval",
    prompt='def add(a, b):\n    """Return a + b."""\n', entry_point="add",
    test="def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n",
)
MBPP_TASK = CodeTask(task_id="Mbpp/900", kind="mbpp", prompt="Write a function to square.",
                     entry_point="square", test_list=("assert square(3) == 9",
                                                      "assert isclose(square(0.5), 0.25)"),
                     test_imports=("from math import isclose",))


def test_reference_tests_pass_and_fail_with_readable_feedback():
    evaluate = ReferenceTests()
    assert isinstance(evaluate, Evaluator)
    good = evaluate(ADD_TASK, "    return a + b\n")
    assert isinstance(good, Evaluation) and good.passed and good.score == 1.0
    bad = evaluate(ADD_TASK, "    return a - b\n")
    assert not bad.passed and bad.score == 0.0
    assert "AssertionError" in bad.feedback and "exit code 1" in bad.feedback
    assert bad.details["task_id"] == "Demo/0"


def test_full_function_redefinition_counts_as_a_completion():
    assert ReferenceTests()(ADD_TASK, "\ndef add(a, b):\n    return b + a\n").passed


def test_mbpp_program_has_imports_code_and_asserts():
    program = reference_program(MBPP_TASK, "def square(x):\n    return x * x\n")
    assert program.index("from math import isclose") < program.index("def square") \
        < program.index("assert square(3) == 9")
    assert ReferenceTests()(MBPP_TASK, "def square(x):\n    return x * x\n").passed
    assert not ReferenceTests()(MBPP_TASK, "def square(x):\n    return x + x\n").passed


def test_parse_test_lines_keeps_valid_asserts_only():
    reply = ("Here are tests:\n```python\nassert add(1, 2) == 3\n  assert add(0, 0) == 0\n"
             "assert add(1, 2) == 3\nassert add(1,\nassert other(1) == 1\nprint(add(1, 1))\n```")
    assert parse_test_lines(reply) == ["assert add(1, 2) == 3", "assert add(0, 0) == 0",
                                       "assert other(1) == 1"]
    assert parse_test_lines(reply, entry_point="add", limit=1) == ["assert add(1, 2) == 3"]


def test_self_tests_give_per_test_feedback_with_actual_output():
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 5", "assert add('a', 1) == 'a1'"]
    ev = SelfTests(tests)(ADD_TASK, "    print('noise')\n    return a + b\n")
    assert not ev.passed and ev.score == 1 / 3
    assert ev.feedback.startswith("Tests passed:\nassert add(1, 2) == 3")
    assert "assert add(2, 2) == 5 # output: 4" in ev.feedback
    assert "assert add('a', 1) == 'a1' # error: TypeError" in ev.feedback
    assert [t["passed"] for t in ev.details["tests"]] == [True, False, False]
    assert "noise" not in ev.feedback


def test_self_tests_pass_when_all_pass_and_run_plain_code_without_a_task():
    ev = SelfTests(["assert mul(2, 3) == 6", "assert mul(0, 5) == 0"])(
        None, "def mul(a, b):\n    return a * b\n")
    assert ev.passed and ev.score == 1.0 and "Tests failed:" in ev.feedback


def test_one_endless_test_fails_alone():
    report = run_unit_tests("def f(n):\n    while n: pass\n    return 0\n",
                            ["assert f(0) == 0", "assert f(1) == 0", "assert f(0) == 1"],
                            per_test_s=0.5)
    assert [o.passed for o in report.outcomes] == [True, False, False]
    assert "TimeoutError" in report.outcomes[1].error
    assert report.outcomes[2].output == "0"


def test_code_that_does_not_run_fails_every_test_with_the_reason():
    ev = SelfTests(["assert f() == 1"])(None, "def f(:\n    return 1\n")
    assert not ev.passed and ev.score == 0.0
    assert ev.feedback.startswith("The code did not run:") and "SyntaxError" in ev.feedback


def test_whole_run_dying_is_reported_not_raised():
    ev = SelfTests(["assert f() == 1"])(None, "import os\nos._exit(7)\n")
    assert not ev.passed and "exit code 7" in ev.feedback


def test_no_tests_means_not_checked():
    ev = SelfTests([])(None, "x = 1")
    assert not ev.passed and "No valid unit tests" in ev.feedback
