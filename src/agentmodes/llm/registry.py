"""Turn a user's `--llm` / AGENTMODES_LLM value into a ChatModel.

Accepted forms:
    (nothing), "local"     the embedded default model (SmolLM2-135M-Instruct, llama.cpp)
    PATH.gguf              any GGUF model file, run by llama.cpp in-process
    openai:MODEL           an OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY)
    scripted:FILE.json     replay a JSON list of replies (demos and tests)

Embedded models are cached per process and path: loading takes under a second, but a
server answering many questions, or a benchmark over a hundred, should load once.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ..errors import ConfigError
from .base import ChatModel

ACCEPTED = "'local', a path to a .gguf file, 'openai:MODEL' or 'scripted:FILE.json'"

_embedded: dict[tuple[str, bool], ChatModel] = {}
_embedded_lock = threading.Lock()


def load_llm(spec: str | None = None) -> ChatModel:
    """The model named by `spec`; None or "" means AGENTMODES_LLM, else the embedded default."""
    if not spec:
        spec = os.environ.get("AGENTMODES_LLM", "").strip() or "local"
    spec = spec.strip()
    if spec == "local":
        return embedded_model(None)
    if spec.startswith("openai:"):
        model = spec[len("openai:"):].strip()
        if not model:
            raise ConfigError("openai: needs a model name, e.g. --llm openai:gpt-4o-mini")
        from .openai_compat import OpenAICompatModel
        return OpenAICompatModel(model)
    if spec.startswith("scripted:"):
        return _scripted(spec[len("scripted:"):].strip())
    if spec.lower().endswith(".gguf") or Path(spec).expanduser().is_file():
        return embedded_model(spec)
    raise ConfigError(f"unknown LLM {spec!r}: use {ACCEPTED}")


def embedded_model(path: str | os.PathLike | None, *, prefix_reuse: bool = True) -> ChatModel:
    """The process-wide llama.cpp model for `path` (None: the default model)."""
    from .llamacpp import LlamaCppModel, default_model_path

    resolved = Path(path if path is not None else default_model_path()).expanduser().resolve()
    key = (str(resolved), prefix_reuse)
    with _embedded_lock:
        model = _embedded.get(key)
        if model is None or getattr(model, "closed", False):
            model = LlamaCppModel(resolved, prefix_reuse=prefix_reuse)
            _embedded[key] = model
        return model


def _scripted(path: str) -> ChatModel:
    from .scripted import ScriptedModel

    if not path:
        raise ConfigError("scripted: needs a JSON file, e.g. --llm scripted:replies.json")
    try:
        replies = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"scripted replies file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"scripted replies file {path} is not readable JSON: "
                          f"{' '.join(str(err).split())}") from None
    if (not isinstance(replies, list) or not replies
            or not all(isinstance(r, (str, list)) for r in replies)):
        raise ConfigError(f"scripted replies file {path} must hold a non-empty JSON list of "
                          "strings (text replies) or lists of tool calls")
    return ScriptedModel(replies)


__all__ = ["load_llm", "embedded_model", "ACCEPTED"]
