"""`agentmodes users`: named API keys for `agentmodes serve`, managed by the operator.

    agentmodes users add alice [--role chat|admin] [--db FILE]   # prints alice's key once
    agentmodes users list | remove NAME | rotate NAME [--db FILE]

Each user's conversations are its own; admins see everyone's. The key is printed on stdout
(and nowhere else, ever: only its hash is stored), so `KEY=$(agentmodes users add alice)`
works. The same is available to admins over HTTP (POST /api/users).
"""

from __future__ import annotations

import json
import os

import typer

from .main import app

users_app = typer.Typer(help="API users of `agentmodes serve`: each gets a key of its own.",
                        no_args_is_help=True)
app.add_typer(users_app, name="users")

DB_HELP = "Chat database the server uses (SQLite file or SQLAlchemy URL)."


def _service(db: str):
    from ..server.runtime import data_dir_for
    from ..service import AgentChatService
    from ..store.chat import ChatStore
    return AgentChatService(ChatStore.open(db), llm_factory=lambda: None,
                            data_dir=data_dir_for(db))


@users_app.command("add")
def add(name: str, role: str = typer.Option("chat", help="chat (ask, own conversations) or "
                                            "admin (everything)"),
        db: str = typer.Option("agentmodes-chat.db", help=DB_HELP)) -> None:
    """Create a user and print its key (shown this once)."""
    service = _service(db)
    user, key = service.create_user(name, role,
                                    admin_key_set=bool(os.environ.get("AGENTMODES_API_KEY")))
    typer.echo(f"agentmodes: user {user.name} ({user.role}) created; its key follows and is "
               "not shown again", err=True)
    typer.echo(key)


@users_app.command("list")
def list_(db: str = typer.Option("agentmodes-chat.db", help=DB_HELP),
          as_json: bool = typer.Option(False, "--json", help="One JSON object per line.")) -> None:
    """List users (names, roles, creation times; never keys)."""
    for user in _service(db).list_users():
        if as_json:
            typer.echo(json.dumps({"name": user.name, "role": user.role,
                                   "created_at": user.created_at}))
        else:
            typer.echo(f"{user.name}\t{user.role}\t{user.created_at}")


@users_app.command("remove")
def remove(name: str, db: str = typer.Option("agentmodes-chat.db", help=DB_HELP)) -> None:
    """Delete a user: its key stops working; its conversations stay (admins see them)."""
    _service(db).delete_user(name)
    typer.echo(f"agentmodes: user {name} removed", err=True)


@users_app.command("rotate")
def rotate(name: str, db: str = typer.Option("agentmodes-chat.db", help=DB_HELP)) -> None:
    """Give a user a new key (printed once); the old key stops working at once."""
    typer.echo(_service(db).rotate_user_key(name))
