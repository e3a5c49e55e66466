"""`python -m agentmodes` is the `agentmodes` command."""

from agentmodes.cli.main import run

run()
