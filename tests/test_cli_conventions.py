"""The command line's shared conventions, as a user meets them: --version, stdin as `-`,
--quiet, JSON Lines, exit codes (1 runtime, 2 usage), help with choices and examples,
shell completion, and benchmark tables that never cut a name or a number."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from agentmodes.rich_tables import print_table
from kb_fixtures import examples_kb, scripted_replies


def cli(*args: str, stdin: str | None = None, env_extra: dict | None = None,
        cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENTMODES_KB": "", **(env_extra or {})}
    env.pop("AGENTMODES_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "agentmodes", *args], input=stdin,
                          capture_output=True, text=True, timeout=120, env=env, cwd=cwd,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory):
    return examples_kb(tmp_path_factory.mktemp("conventions") / "examples.db")


def replies(tmp_path: Path, items) -> str:
    return f"scripted:{scripted_replies(tmp_path, items)}"


def test_version():
    from agentmodes import __version__

    for flag in ("--version", "-V"):
        done = cli(flag)
        assert done.returncode == 0 and done.stdout.strip() == f"agentmodes {__version__}"


def test_search_reads_the_query_from_stdin(kb_file):
    piped = cli("search", "-", "--kb", str(kb_file), "--mode", "lexical", "--json",
                stdin="Öffnungszeiten\n")
    given = cli("search", "Öffnungszeiten", "--kb", str(kb_file), "--mode", "lexical", "--json")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == given.stdout and '"type": "hit"' in piped.stdout


def test_dash_without_a_pipe_is_a_usage_error(kb_file):
    done = cli("search", "-", "--kb", str(kb_file))          # stdin is /dev/null: empty
    assert done.returncode == 2 and "stdin" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_ask_question_from_stdin_quiet_keeps_only_the_answer(kb_file, tmp_path):
    llm = replies(tmp_path, ['THOUGHT: search\nACTION: lexical_search("Öffnungszeiten")',
                             "THOUGHT: found\nFINAL ANSWER: Mo-Fr 9-18 Uhr [1]"])
    done = cli("ask", "-", "--kb", str(kb_file), "--llm", llm, "--mode", "react", "--quiet",
               stdin="Wann hat die DG Agentur geöffnet?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Mo-Fr 9-18 Uhr [1]")
    assert done.stderr == ""                                   # no trace, no cost line
    loud = cli("-q", "ask", "-", "--kb", str(kb_file), "--llm", llm, "--mode", "react",
               stdin="Wann hat die DG Agentur geöffnet?")     # the global form
    assert loud.returncode == 0 and loud.stderr == ""


def test_piped_stdin_is_context_for_the_question(kb_file, monkeypatch):
    from typer.testing import CliRunner

    from agentmodes.cli import ask_command
    from agentmodes.cli.main import _register, app
    from agentmodes.llm.scripted import ScriptedModel

    _register()
    model = ScriptedModel(["THOUGHT: the notes say it.\nFINAL ANSWER: Tuesday"])
    monkeypatch.setattr(ask_command, "_load_llm", lambda spec: model)
    notes = "Meeting notes: the printer will be repaired on Tuesday.\n"
    result = CliRunner().invoke(app, ["ask", "When is the printer repaired?", "-", "--kb",
                                      str(kb_file), "--mode", "react", "--json"], input=notes)
    assert result.exit_code == 0, result.output
    prompt = model.prompts[0]
    assert notes.strip() in json.dumps(prompt, ensure_ascii=False)
    assert prompt[-1] == {"role": "user", "content": "When is the printer repaired?"}
    done = [json.loads(line) for line in result.stdout.splitlines()][-1]
    assert done["type"] == "done" and done["full_response"].startswith("Tuesday")


def test_system_prompt_reaches_the_model(kb_file, monkeypatch):
    from typer.testing import CliRunner

    from agentmodes.cli import ask_command
    from agentmodes.cli.main import _register, app
    from agentmodes.llm.scripted import ScriptedModel

    _register()
    model = ScriptedModel(["THOUGHT: known.\nFINAL ANSWER: ja?"])
    monkeypatch.setattr(ask_command, "_load_llm", lambda spec: model)
    result = CliRunner().invoke(app, ["ask", "Geöffnet?", "--kb", str(kb_file), "--mode",
                                      "react", "--system", "Antworte immer im Reimform.",
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert model.prompts[0][0]["content"].startswith("Antworte immer im Reimform.")


def test_exit_codes_runtime_one_usage_two(kb_file, tmp_path):
    assert cli("search", "x", "--kb", str(tmp_path / "absent.db")).returncode == 1
    assert cli("search", "x", "--kb", str(kb_file), "-k", "0").returncode == 2
    assert cli("ask", "x", "--kb", str(kb_file), "--llm", "nonsense:x").returncode == 2
    assert cli("search", "--bogus").returncode == 2


def test_help_shows_choices_and_examples_not_types():
    done = cli("ask", "--help")
    assert done.returncode == 0
    assert "<act|react|reflact|plan-and-solve>" in done.stdout and "<lookup|multihop>" in done.stdout
    assert "Examples:" in done.stdout and 'cat notes.md | agentmodes ask' in done.stdout
    assert "<bool>" not in done.stdout
    search = cli("search", "--help").stdout
    assert "<lexical|semantic|hybrid>" in search and "<bool>" not in search


def test_a_placeholder_ingest_creates_no_kb(tmp_path):
    kb = tmp_path / "kb.db"
    done = cli("ingest", str(tmp_path / "PATH"), "--kb", str(kb), "--no-embed")
    assert done.returncode == 1 and "nothing to ingest" in done.stderr
    assert not kb.exists()


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o default -F"),
                                           ("zsh", "#compdef agentmodes"),
                                           ("fish", "complete --command agentmodes")])
def test_completion_scripts(shell, marker):
    done = cli("completion", shell)
    assert done.returncode == 0 and marker in done.stdout


def test_completion_offers_commands_and_choices():
    env = {"_AGENTMODES_COMPLETE": "complete_bash", "COMP_WORDS": "agentmodes ask x --mode ",
           "COMP_CWORD": "4"}
    assert cli(env_extra=env).stdout.split() == ["act", "react", "reflact", "plan-and-solve"]
    env.update(COMP_WORDS="agentmodes se", COMP_CWORD="1")
    assert set(cli(env_extra=env).stdout.split()) == {"search", "serve"}


def test_tables_never_cut_names_or_numbers():
    table = Table(title="hotpotqa (openai:a-rather-long-model-name)")
    for name in ("variant", "EM", "F1", "trials/task", "tasks", "errors", "LLM calls/task",
                 "tokens/task", "iterations/task", "time/task (s)"):
        table.add_column(name, justify="right")
    for variant in ("reflection", "reflexion", "reflact+reflexion"):
        table.add_row(variant, "0.123", "0.456", "1.00", "100", "0", "3.1", "123456789",
                      "2.34", "1234.5")
    buffer = io.StringIO()
    print_table(table, Console(file=buffer, width=80))       # a pipe: rich's 80 columns
    text = buffer.getvalue()
    for whole in ("reflection", "reflexion", "reflact+reflexion", "123456789", "1234.5",
                  "LLM calls/task", "time/task (s)"):
        assert whole in text, whole
    assert "…" not in text
