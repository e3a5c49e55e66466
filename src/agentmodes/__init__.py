"""agentmodes: LLM agents over your own documents, in the reasoning mode that fits the task.

    from agentmodes import Agent, KnowledgeBase, ChatbotSettings

Imports are lazy so that `import agentmodes` stays fast and a backend's heavy dependencies
(llama.cpp, the embedder) load only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Agent", "KnowledgeBase", "ChatbotSettings", "AgentModesError"]

_LAZY = {
    "Agent": ("agentmodes.agent", "Agent"),
    "KnowledgeBase": ("agentmodes.knowledge.base", "KnowledgeBase"),
    "ChatbotSettings": ("agentmodes.settings", "ChatbotSettings"),
    "AgentModesError": ("agentmodes.errors", "AgentModesError"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'agentmodes' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent
    from .knowledge.base import KnowledgeBase
    from .settings import ChatbotSettings
    from .errors import AgentModesError
