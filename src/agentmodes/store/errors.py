"""What the chat store raises; re-exported by store.chat."""

from __future__ import annotations

from ..errors import AgentModesError


class ChatStoreError(AgentModesError):
    """A chatbot, conversation or job that does not exist, or a duplicate chatbot name."""


class NotFoundError(ChatStoreError):
    """The named chatbot, conversation, message or job does not exist."""


class ConflictError(ChatStoreError):
    """A chatbot with that name already exists."""
