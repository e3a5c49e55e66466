"""The `agentmodes` command: one entry point, subcommands registered by their modules.

Errors a user can act on (AgentModesError) print one line on stderr and exit 2; Ctrl-C
exits 130. No traceback reaches the user unless AGENTMODES_DEBUG=1.
"""

from __future__ import annotations

import os
import sys

import typer

from ..errors import AgentModesError

app = typer.Typer(
    name="agentmodes",
    help="Answer questions over your own documents with LLM agents (ACT, ReAct, ReflAct, "
         "Reflection, Reflexion).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(help="Benchmarks; each writes JSON and Markdown under benchmarks/results/.",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")


def fail(message: str, code: int = 2) -> "typer.Exit":
    """Print one line to stderr and return an Exit to raise."""
    typer.echo(f"agentmodes: error: {message}", err=True)
    return typer.Exit(code)


def _register() -> None:
    # Each command module adds its commands to `app` / `bench_app` on import.
    from . import kb_commands  # noqa: F401  ingest, search
    from . import serve_command  # noqa: F401  serve
    from . import bench_commands  # noqa: F401  bench humaneval, mbpp (and retrieval)
    from . import ask_command  # noqa: F401  ask
    from . import overhead_command  # noqa: F401  bench overhead
    from . import reflect_command  # noqa: F401  reflect
    from . import bench_llm_commands  # noqa: F401  bench hotpotqa
    from . import embedded_command  # noqa: F401  bench prefix-reuse, wellformed


def run() -> None:
    _register()
    try:
        app()
    except AgentModesError as err:
        if os.environ.get("AGENTMODES_DEBUG"):
            raise
        typer.echo(f"agentmodes: error: {err}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("agentmodes: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    run()
