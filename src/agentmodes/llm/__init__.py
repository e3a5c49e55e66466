"""LLM backends behind one ChatModel interface: OpenAI-compatible HTTP, embedded llama.cpp,
and a scripted replayer. Backends with heavy dependencies load only when asked for."""

from .base import ChatChunk, ChatModel, GenerationOptions, Message, ToolCallDelta, ToolSpec
from .completion import Completion, ToolCall, collect
from .grammars import step_grammar
from .registry import embedded_model, load_llm
from .scripted import ScriptedModel

__all__ = [
    "ChatChunk", "ChatModel", "Completion", "GenerationOptions", "Message", "ScriptedModel",
    "ToolCall", "ToolCallDelta", "ToolSpec", "collect", "embedded_model", "load_llm",
    "step_grammar",
]
