"""The `agentmodes` command: one entry point, subcommands registered by their modules.

Exit codes, as Unix tools use them: 0 success, 1 a runtime failure (a missing file, an
unreachable server, a failed run), 2 a usage error (unknown option or choice, a bad value,
an unknown mode or backend spec: ConfigError), 130 Ctrl-C. Every error is one line on
stderr, `agentmodes: error: ...`; no traceback reaches the user unless AGENTMODES_DEBUG=1.

Global options: `--version`, `--quiet` (also accepted after a command name, see
cli/output.py), and shell completion (`agentmodes completion bash|zsh|fish`).
"""

from __future__ import annotations

import os
import sys

import typer

try:  # typer >= 0.23 vendors click as typer._click; older versions use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

from ..errors import AgentModesError, ConfigError
from . import output

USAGE = 2       # exit code of a usage error
RUNTIME = 1     # exit code of a runtime failure

# rich_markup_mode=None: plain, pipe-friendly help (no boxes, no `<bool>` after flags);
# `\b` paragraphs in docstrings keep examples verbatim.
app = typer.Typer(
    name="agentmodes",
    no_args_is_help=True,
    add_completion=False,          # `agentmodes completion SHELL` instead (cli/completion.py)
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
bench_app = typer.Typer(help="Benchmarks; each prints its table and writes JSON and Markdown "
                             "under --out (default: $AGENTMODES_RESULTS, else "
                             "~/.local/share/agentmodes/bench).",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(bench_app, name="bench")


def fail(message: str, code: int = USAGE) -> "typer.Exit":
    """Print one line to stderr and return an Exit to raise: `raise fail("...")` for a
    usage error (exit 2), `raise fail("...", RUNTIME)` for a runtime failure (exit 1)."""
    typer.echo(f"agentmodes: error: {message}", err=True)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from .. import __version__
        typer.echo(f"agentmodes {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    quiet: bool = output.QUIET_OPTION,
) -> None:
    """Answer questions over your own documents with LLM agents (ACT, ReAct, ReflAct,
    Reflection, Reflexion).

    \b
    Examples:
      agentmodes ingest docs/ --kb kb.db
      agentmodes search "opening hours" --kb kb.db --json | jq .title
      agentmodes ask "Wann hat die DG Agentur geöffnet?" --kb kb.db --mode react
      cat notes.md | agentmodes ask "Summarise the open points" -
      agentmodes chat --kb kb.db -c
    """
    output.set_quiet(quiet)


def _register(argv: list[str] | None = None) -> None:
    """Import the command modules; each adds its commands to `app` / `bench_app`.

    The benchmark modules (and what they pull in: code data, the sandbox, rich tables) are
    imported only when the command line is `agentmodes bench ...` (or argv is None: every
    command, for completion and docs): they cost `agentmodes --help` and every `ask` or
    `search` 45-70 ms otherwise."""
    from . import kb_commands  # noqa: F401  ingest, search
    from . import serve_command  # noqa: F401  serve
    from . import ask_command  # noqa: F401  ask
    from . import reflect_command  # noqa: F401  reflect
    from . import users_command  # noqa: F401  users add, list, remove, rotate
    from . import completion  # noqa: F401  completion
    from . import docs_command  # noqa: F401  docs list, show, rm
    from . import chat_command  # noqa: F401  chat
    from . import mcp_command  # noqa: F401  mcp
    from . import compare_command  # noqa: F401  compare
    if argv is None or next((a for a in argv if not a.startswith("-")), None) == "bench":
        from . import bench_commands  # noqa: F401  bench humaneval, mbpp, retrieval, server
        from . import overhead_command  # noqa: F401  bench overhead
        from . import bench_llm_commands  # noqa: F401  bench hotpotqa
        from . import alfworld_command  # noqa: F401  bench alfworld
        from . import embedded_command  # noqa: F401  bench prefix-reuse, wellformed
        from . import scale_command  # noqa: F401  bench scale, index-candidates
        from . import pg_hnsw_command  # noqa: F401  bench pg-hnsw
        from . import formats_command  # noqa: F401  bench formats
        from . import answers_command  # noqa: F401  bench answers
        from . import bench_modes_command  # noqa: F401  bench modes


def _error(message: str, code: int) -> None:
    typer.echo(f"agentmodes: error: {' '.join(str(message).split())}", err=True)
    sys.exit(code)


def run() -> None:
    _register(None if os.environ.get("_AGENTMODES_COMPLETE") else sys.argv[1:])
    if os.environ.get("_AGENTMODES_COMPLETE"):      # the shell asks for completions
        from typer._completion_classes import completion_init
        completion_init()
    # standalone_mode=False hands usage errors and Ctrl-C to us, so that each becomes one
    # line instead of click's boxed, multi-line report or a KeyboardInterrupt traceback.
    try:
        if os.environ.get("AGENTMODES_LOG_LEVEL"):   # every command; serve also --log-level
            from ..log_setup import configure
            configure()
        result = app(standalone_mode=False, prog_name="agentmodes")
    except typer.Exit as done:          # raised inside a callback (--version)
        sys.exit(done.exit_code)
    except AgentModesError as err:
        if os.environ.get("AGENTMODES_DEBUG"):
            raise
        _error(str(err), USAGE if isinstance(err, ConfigError) else RUNTIME)
    except click_errors.NoArgsIsHelpError as err:
        typer.echo(err.ctx.get_help() if err.ctx else str(err), err=True)
        sys.exit(USAGE)
    except click_errors.UsageError as err:
        where = err.ctx.command_path if err.ctx else "agentmodes"
        _error(f"{err.format_message()} (see '{where} --help')", err.exit_code)
    except click_errors.ClickException as err:
        _error(err.format_message(), err.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("agentmodes: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:             # `agentmodes search ... | head -1`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
        sys.exit(RUNTIME)
    except OSError as err:              # disk full, permission denied on an output file
        if os.environ.get("AGENTMODES_DEBUG"):
            raise
        _error(f"{err.strerror or err}" + (f": {err.filename}" if err.filename else ""),
               RUNTIME)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    # Run through the package module, not this __main__ copy: the command modules register
    # on agentmodes.cli.main.app, which would otherwise be a second, empty app.
    from agentmodes.cli.main import run as _run
    _run()
