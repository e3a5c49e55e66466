"""The `agentmodes` command: one entry point, subcommands registered by their modules.

Errors a user can act on (AgentModesError) print one line on stderr and exit 2; Ctrl-C
exits 130. No traceback reaches the user unless AGENTMODES_DEBUG=1.
"""

from __future__ import annotations

import os
import sys

import typer

try:  # typer >= 0.23 vendors click as typer._click; older versions use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

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
    from . import users_command  # noqa: F401  users add, list, remove, rotate


def run() -> None:
    _register()
    # standalone_mode=False hands usage errors and Ctrl-C to us, so that each becomes one
    # line instead of click's boxed, multi-line report or a KeyboardInterrupt traceback.
    try:
        result = app(standalone_mode=False)
    except AgentModesError as err:
        if os.environ.get("AGENTMODES_DEBUG"):
            raise
        typer.echo(f"agentmodes: error: {err}", err=True)
        sys.exit(2)
    except click_errors.NoArgsIsHelpError as err:
        typer.echo(err.ctx.get_help() if err.ctx else str(err), err=True)
        sys.exit(2)
    except click_errors.UsageError as err:
        where = err.ctx.command_path if err.ctx else "agentmodes"
        message = " ".join(err.format_message().split())
        typer.echo(f"agentmodes: error: {message} (see '{where} --help')", err=True)
        sys.exit(err.exit_code)
    except click_errors.ClickException as err:
        typer.echo(f"agentmodes: error: {' '.join(err.format_message().split())}", err=True)
        sys.exit(err.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("agentmodes: interrupted", err=True)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    # Run through the package module, not this __main__ copy: the command modules register
    # on agentmodes.cli.main.app, which would otherwise be a second, empty app.
    from agentmodes.cli.main import run as _run
    _run()
