"""`agentmodes completion bash|zsh|fish`: print the shell's completion script.

Printed rather than installed behind the user's back (as gh and kubectl do), so it works
the same in a dotfile, a Dockerfile or CI:

    agentmodes completion bash > ~/.local/share/bash-completion/completions/agentmodes
    agentmodes completion zsh > "${fpath[1]}/_agentmodes"
    agentmodes completion fish > ~/.config/fish/completions/agentmodes.fish

The script calls `agentmodes` back with _AGENTMODES_COMPLETE set; click's completion then
answers with commands, options and choice values (e.g. `--mode <TAB>` offers act, react,
reflact).
"""

from __future__ import annotations

from typing import Literal

import typer

from .main import app

COMPLETE_VAR = "_AGENTMODES_COMPLETE"


@app.command()
def completion(shell: Literal["bash", "zsh", "fish"] = typer.Argument(
        ..., metavar="SHELL", help="bash, zsh or fish.")) -> None:
    """Print the completion script for a shell.

    \b
    Examples:
      agentmodes completion bash > ~/.local/share/bash-completion/completions/agentmodes
      agentmodes completion zsh > "${fpath[1]}/_agentmodes"
      agentmodes completion fish > ~/.config/fish/completions/agentmodes.fish
    """
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script

    completion_init()
    typer.echo(get_completion_script(prog_name="agentmodes", complete_var=COMPLETE_VAR,
                                     shell=shell))
