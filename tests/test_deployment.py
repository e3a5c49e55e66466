"""compose.yaml and the Dockerfile, checked without docker (which does not run here): the
file's structure, and the workers' command with the file's own environment run for real
against a PostgreSQL server (the URL pointed at the test server instead of the `db`
container, the scripted model instead of the `llm` container)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
import yaml

from agentmodes.server.process import free_port
from pg_support import pg_server, pg_url  # noqa: F401
from server_support import write_script
from test_server_workers import _worker_pids

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
SRC = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))


def interpolate(value: str, env: dict[str, str]) -> str:
    """compose's ${VAR:-default} / ${VAR:?error} / $$ for the values this file uses."""
    def one(match: re.Match) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == ":?":
            raise KeyError(f"{name}: {arg}")
        return arg or ""
    text = re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", one, str(value))
    return text.replace("$$", "$")


def test_compose_has_the_database_the_llm_server_and_the_workers():
    services = COMPOSE["services"]
    assert set(services) == {"db", "llm", "agentmodes"}
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    assert "llama_cpp.server" in " ".join(services["llm"]["command"])
    # Concurrent chats must queue, not cut each other off (the server's default).
    assert "--interrupt_requests False" in " ".join(services["llm"]["command"])
    app = services["agentmodes"]
    assert app["depends_on"] == {"db": {"condition": "service_healthy"},
                                 "llm": {"condition": "service_healthy"}}
    env = {k: interpolate(v, {"AGENTMODES_API_KEY": "k"}) for k, v in app["environment"].items()}
    assert env["AGENTMODES_DB"].startswith("postgresql://agentmodes:") and "@db:5432/" in \
        env["AGENTMODES_DB"]
    assert env["OPENAI_BASE_URL"] == "http://llm:8080/v1" and int(env["AGENTMODES_WORKERS"]) >= 2
    with pytest.raises(KeyError, match="AGENTMODES_API_KEY"):     # no open server by accident
        interpolate(app["environment"]["AGENTMODES_API_KEY"], {})
    # Every variable the file sets is one the code reads.
    for name in env:
        assert f'"{name}"' in SRC, f"{name} is set in compose.yaml but read nowhere"
    assert app["volumes"] == ["data:/data"] and env["AGENTMODES_DATA_DIR"] == "/data"


def test_the_dockerfile_installs_extras_that_exist():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    wanted = re.search(r'pip install --no-cache-dir "\.\[([\w,]+)\]"', dockerfile).group(1)
    assert set(wanted.split(",")) <= set(extras) and "postgres" in wanted
    assert COMPOSE["services"]["agentmodes"]["build"] == "."


def test_the_llm_services_model_path_resolves():
    command = COMPOSE["services"]["llm"]["command"][2]
    inner = re.search(r"\$\$\(python -c '(.+?)'\)", command, re.S).group(1)
    path = subprocess.run([sys.executable, "-c", " ".join(inner.split())], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert path.endswith(".gguf") and Path(path).is_file()


@pytest.mark.timeout(240)
def test_the_workers_command_and_environment_serve_on_postgresql(pg_url, tmp_path):
    app = COMPOSE["services"]["agentmodes"]
    port = free_port()
    env = {k: interpolate(v, {"AGENTMODES_API_KEY": "compose-key"})
           for k, v in app["environment"].items()}
    env.update(AGENTMODES_DB=pg_url, AGENTMODES_DATA_DIR=str(tmp_path / "data"),
               AGENTMODES_LLM=f"scripted:{write_script(tmp_path / 's.json')}")
    command = [str(port) if arg == "8000" else "127.0.0.1" if arg == "0.0.0.0" else arg
               for arg in app["command"]]
    assert command[:2] == ["agentmodes", "serve"]
    base = {k: v for k, v in __import__("os").environ.items()
            if not k.startswith(("AGENTMODES_", "OPENAI_"))}
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                             *command[1:], "--no-access-log"], env={**base, **env},
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        health = None
        for _ in range(600):        # up to 2 minutes on a loaded machine
            if proc.poll() is not None:
                pytest.fail(f"serve exited: {(tmp_path / 'serve.log').read_text()[-2000:]}")
            try:
                health = httpx.get(f"{url}/api/health", timeout=1)
                break
            except httpx.HTTPError:
                __import__("time").sleep(0.2)
        assert health is not None and health.status_code == 200
        keyed = {"Authorization": "Bearer compose-key"}
        assert httpx.get(f"{url}/api/chatbots", timeout=10).status_code == 401
        made = httpx.post(f"{url}/api/chatbots", json={"name": "docker"}, headers=keyed,
                          timeout=30)
        assert made.status_code == 201, made.text
        assert len(_worker_pids(proc.pid, int(env["AGENTMODES_WORKERS"]))) == \
            int(env["AGENTMODES_WORKERS"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
