"""LLM backends behind one ChatModel interface: OpenAI-compatible HTTP, embedded llama.cpp,
and a scripted replayer. Backends with heavy dependencies load only when asked for."""

from typing import Any

from .base import ChatChunk, ChatModel, GenerationOptions, Message, ToolCallDelta, ToolSpec
from .completion import Completion, ToolCall, collect
from .grammars import step_grammar
from .registry import embedded_model, load_llm
from .scripted import ScriptedModel

_LAZY = {"OpenAICompatModel": ".openai_compat", "LlamaCppModel": ".llamacpp"}

__all__ = [
    "ChatChunk", "ChatModel", "Completion", "GenerationOptions", "LlamaCppModel", "Message",
    "OpenAICompatModel", "ScriptedModel", "ToolCall", "ToolCallDelta", "ToolSpec", "collect",
    "embedded_model", "load_llm", "step_grammar",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
