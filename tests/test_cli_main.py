"""The entry point turns usage mistakes into one line and a non-zero exit, never a traceback."""

import subprocess
import sys

import pytest


def agentmodes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmodes", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, fragment", [
    (["bench", "no-such-benchmark"], "No such command 'no-such-benchmark'"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["search", "--no-such-flag", "x"], "--no-such-flag"),
])
def test_usage_errors_are_one_line(args, fragment):
    proc = agentmodes(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("agentmodes: error:") and fragment in lines[0]
    assert "Traceback" not in proc.stderr


def test_help_lists_every_command():
    proc = agentmodes("--help")
    assert proc.returncode == 0
    for command in ("ingest", "search", "ask", "reflect", "serve", "bench"):
        assert command in proc.stdout


LOADED_MODULES = """
import sys
from agentmodes.cli import main
sys.argv = ["agentmodes", *sys.argv[1:]]
try:
    main.run()
except SystemExit:
    pass
print(",".join(m for m in ("agentmodes.cli.bench_commands", "agentmodes.bench.codedata",
                           "agentmodes.cli.scale_command") if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize("args, expected", [(["--help"], ""), (["search", "--help"], ""),
                                            (["bench", "--help"], "agentmodes.cli.bench_commands,"
                                             "agentmodes.bench.codedata,agentmodes.cli.scale_command")])
def test_start_up_imports_the_benchmarks_only_for_bench(args, expected):
    proc = subprocess.run([sys.executable, "-c", LOADED_MODULES, *args], capture_output=True,
                          text=True, timeout=120)
    assert proc.stderr.strip().splitlines()[-1:] == ([expected] if expected else [])
    if args[0] == "bench":
        assert "scale" in proc.stdout and "retrieval" in proc.stdout
