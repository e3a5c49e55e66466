"""The code benchmark harness end to end on real HumanEval/MBPP data and the real sandbox,
with a fake model that answers by prompt kind (deterministic, no LLM needed)."""

from __future__ import annotations

import json

import pytest

from agentmodes.bench.codedata import load_humaneval, load_mbpp
from agentmodes.bench.codegen import parse_strategies, run_codegen, task_text
from agentmodes.errors import ConfigError
from agentmodes.events import Usage
from agentmodes.llm.base import ChatChunk
from data_support import HUMANEVAL, MBPP, needs_data

pytestmark = needs_data(HUMANEVAL, MBPP)

PASS = '{"verdict": "pass", "issues": []}'


class FakeCoder:
    """Writes the reference solution (or a wrong one) for whichever task the prompt shows;
    a reviewer prompt gets a pass verdict; a test-writing prompt gets prose (so the harness
    falls back to its load check)."""

    name, supports_tools, supports_grammar = "fake-coder", False, False

    def __init__(self, tasks, *, wrong: bool = False):
        self.tasks, self.wrong, self.calls = tasks, wrong, 0

    def _reply(self, text: str) -> str:
        if "independent, extremely strict reviewer" in text:
            return "Fine.\n" + PASS
        if "unit tests for the function" in text:
            return "I would test a few inputs."
        if "learns from its mistakes" in text:
            return "Return the right value next time."
        for task in self.tasks:
            if task_text(task) in text or task.prompt.strip() in text:
                if self.wrong:
                    return f"```python\ndef {task.entry_point}(*args):\n    return None\n```"
                code = task.prompt + task.reference if task.kind == "humaneval" else task.reference
                return f"```python\n{code}\n```"
        raise AssertionError("prompt shows no known task")

    def stream(self, messages, options=None):
        self.calls += 1
        text = self._reply(messages[-1]["content"])
        yield ChatChunk(text=text)
        yield ChatChunk(usage=Usage(len(messages[-1]["content"].split()), len(text.split()), 0, 1))

    def close(self):
        pass


class NoCalls(FakeCoder):
    def stream(self, messages, options=None):
        raise AssertionError("a resumed run must not call the model for finished tasks")


def test_three_strategies_score_resume_and_report(tmp_path):
    tasks = load_humaneval()[:3]
    model = FakeCoder(tasks)
    run = run_codegen("humaneval", model, llm_label="fake:coder", strategies=list(parse_strategies(
        "simple,reflection,reflexion")), limit=3, out_dir=tmp_path, show_progress=False)
    rows = {r["variant"]: r for r in run.report.rows}
    assert [r["pass_at_1"] for r in rows.values()] == [1.0, 1.0, 1.0]
    # simple = 1 call; reflection = tests + draft + review; reflexion = tests + draft.
    assert rows["simple"]["llm_calls_per_task"] == 1
    assert rows["reflection"]["llm_calls_per_task"] == 3
    assert rows["reflexion"]["llm_calls_per_task"] == 2
    assert rows["reflexion"]["self_tests_pass_rate"] == 1.0
    assert rows["simple"]["self_tests_pass_rate"] is None     # shown as "-": no tests written
    lines = run.log_path.read_text().splitlines()
    assert len(lines) == 9 and all(json.loads(l)["passed"] for l in lines)
    assert {p.suffix for p in run.paths.values()} == {".json", ".md", ".png"}
    table = run.paths["md"].read_text()
    assert "| simple | 1.000 | - |" in table and "pass@1" in table and "1.00x" in table

    # Rerun: everything is done, the model is not called, the figures are the same.
    again = run_codegen("humaneval", NoCalls(tasks), llm_label="fake:coder",
                        strategies=["simple", "reflection", "reflexion"], limit=3,
                        out_dir=tmp_path, show_progress=False)
    assert again.report.rows == run.report.rows

    # An interrupted run (last two records lost, one torn line): only those run again.
    run.log_path.write_text("\n".join(lines[:7]) + "\n{\"task_id\": \"Huma")
    model = FakeCoder(tasks)
    resumed = run_codegen("humaneval", model, llm_label="fake:coder",
                          strategies=["simple", "reflection", "reflexion"], limit=3,
                          out_dir=tmp_path, show_progress=False)
    assert model.calls == 4    # two reflexion tasks: self-tests + draft each
    assert [r["pass_at_1"] for r in resumed.report.rows] == [1.0, 1.0, 1.0]


def test_wrong_programs_fail_the_real_tests_and_errors_are_retried(tmp_path):
    tasks = load_mbpp()[:2]
    run = run_codegen("mbpp", FakeCoder(tasks, wrong=True), llm_label="fake", strategies=["simple"],
                      limit=2, out_dir=tmp_path, show_progress=False)
    assert run.report.rows[0]["pass_at_1"] == 0.0
    records = [json.loads(l) for l in run.log_path.read_text().splitlines()]
    assert all(not r["passed"] and r["failure"] for r in records)

    class Broken(FakeCoder):
        def stream(self, messages, options=None):
            raise ConnectionError("server went away")

    out = tmp_path / "other"
    failed = run_codegen("mbpp", Broken(tasks), llm_label="fake", strategies=["simple"], limit=2,
                         out_dir=out, show_progress=False)
    assert failed.report.rows[0]["errors"] == 2 and failed.report.rows[0]["pass_at_1"] == 0.0
    # The errors are not "done": the next run does them.
    fixed = run_codegen("mbpp", FakeCoder(tasks), llm_label="fake", strategies=["simple"],
                        limit=2, out_dir=out, show_progress=False)
    assert fixed.report.rows[0]["pass_at_1"] == 1.0 and fixed.report.rows[0]["errors"] == 0


def test_task_text_hides_the_scoring_tests():
    mbpp = load_mbpp()[0]
    text = task_text(mbpp)
    assert mbpp.test_list[0] in text and mbpp.test_list[1] not in text
    human = load_humaneval()[0]
    assert "check(" not in task_text(human) and human.entry_point in task_text(human)


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown strategy"):
        parse_strategies("simple,magic")


class LearningCoder(FakeCoder):
    """Writes a real self-test, a wrong first program and the right one once it sees its
    previous attempt: what separates tests-only from reflexion is then only the lesson."""

    def __init__(self, tasks):
        super().__init__(tasks)
        self.prompts: list[str] = []

    def _reply(self, text: str) -> str:
        self.prompts.append(text)
        task = self.tasks[0]
        if "unit tests for the function" in text:
            return "assert has_close_elements([1.0, 2.0, 3.9, 4.0], 0.3) == True"
        if "learns from its mistakes" in text:
            return "I returned None; next time compare each pair of numbers."
        if "Your previous attempt" in text:
            return f"```python\n{task.prompt + task.reference}\n```"
        return f"```python\ndef {task.entry_point}(*args):\n    return None\n```"


def test_tests_only_is_reflexion_without_the_lesson_and_shows_the_papers_ablation(tmp_path):
    tasks = load_humaneval()[:1]
    model = LearningCoder(tasks)
    run = run_codegen("humaneval", model, llm_label="fake", limit=1, out_dir=tmp_path,
                      strategies=parse_strategies("tests-only,reflexion"), show_progress=False)
    rows = {r["variant"]: r for r in run.report.rows}
    assert rows["tests-only"]["pass_at_1"] == rows["reflexion"]["pass_at_1"] == 1.0
    # tests-only: tests, wrong draft, retry; reflexion adds the self-reflection call
    assert rows["tests-only"]["llm_calls_per_task"] == 3
    assert rows["reflexion"]["llm_calls_per_task"] == 4
    retries = [p for p in model.prompts if "Your previous attempt" in p]
    assert len(retries) == 2
    ablation, full = retries
    assert "How it was judged" in ablation and "has_close_elements" in ablation
    assert "Lessons from your earlier attempts" not in ablation
    assert "Lessons from your earlier attempts" in full and "compare each pair" in full
    table = run.paths["md"].read_text()
    assert "Published (Shinn et al. 2023, Reflexion, Table 4" in table
    assert "| tests-only (self-written tests, no self-reflection) | 0.60 |" in table
    published = json.loads(run.paths["json"].read_text())["published"]
    assert [r["pass_at_1"] for r in published["rows"]] == [0.60, 0.60, 0.68]


def test_self_tests_are_asserts_by_grammar_on_grammar_backends():
    from agentmodes.llm.scripted import ScriptedModel
    from agentmodes.modes.self_correction import generate_unit_tests, unit_test_grammar

    class GrammarModel(ScriptedModel):
        supports_grammar = True

    llm = GrammarModel(["assert add(2, 3) == 5\nassert add(0, 0) == 0"])
    tests, _ = generate_unit_tests(llm, "Write add(a, b).", entry_point="add", n=3)
    assert tests == ["assert add(2, 3) == 5", "assert add(0, 0) == 0"]
    grammar = llm.calls[0]["options"].grammar
    assert grammar == unit_test_grammar("add", 3) and 'test ::= "assert add("' in grammar
    assert grammar.count('("\\n" test)?') == 2              # at most 3 lines
    assert unit_test_grammar("not a name", 3) is None       # never a broken grammar
    plain = ScriptedModel(["assert add(1, 1) == 2"])
    generate_unit_tests(plain, "Write add(a, b).", entry_point="add")
    assert plain.calls[0]["options"].grammar is None
