"""Errors a user can act on.

Every error the library raises on bad input derives from AgentModesError and carries a
one-line message that says what is wrong and what to do; the CLI prints that line and exits
non-zero instead of showing a traceback.
"""


class AgentModesError(Exception):
    """Base of all user-facing errors: str(err) is one line a user can act on."""


class KnowledgeBaseError(AgentModesError):
    """The knowledge base file is missing, not a KB, locked, or built by another embedder."""


class LLMError(AgentModesError):
    """An LLM backend failed: unreachable server, retries exhausted, bad model path."""


class ConfigError(AgentModesError):
    """An unknown mode, task type, backend spec or setting value."""
