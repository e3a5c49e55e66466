"""Users and who owns which conversation: the part of AgentChatService that says who may
see what. A conversation belongs to the principal that started it; others cannot list,
read, continue or delete it, and an unknown and a foreign conversation look the same (404).
Admins see all. Library code that passes no principal acts as the owner of everything.
"""

from __future__ import annotations

import time
from typing import Optional

from .store.chat import ChatStore, Conversation, NotFoundError, StoredMessage
from .store.users import Principal, User, UserError


class UsersAndOwners:
    """Mixed into AgentChatService (which provides `store`)."""

    store: ChatStore
    _users_checked: tuple[bool, float] = (False, 0.0)

    # users ------------------------------------------------------------------------------
    def create_user(self, name: str, role: str = "chat", *,
                    admin_key_set: bool = False) -> tuple[User, str]:
        """A new user and its key; the key is not stored and cannot be shown again.
        `admin_key_set`: AGENTMODES_API_KEY administers the server, so the first user may
        be a chat user."""
        if role != "admin" and not admin_key_set and not self.store.users.any():
            # The first user turns auth on: with no admin key, it must be able to administer.
            raise UserError("the first user must be an admin (role admin) unless "
                            "AGENTMODES_API_KEY is set")
        made = self.store.users.create(name, role)
        self._users_checked = (True, time.monotonic())
        return made

    def list_users(self) -> list[User]:
        return self.store.users.list()

    def delete_user(self, name: str) -> None:
        """The user's key stops working; its conversations stay, visible to admins."""
        self.store.users.delete(name)
        self._users_checked = (False, 0.0)

    def rotate_user_key(self, name: str) -> str:
        return self.store.users.rotate_key(name)

    def authenticate(self, key: str) -> Optional[Principal]:
        user = self.store.users.authenticate(key)
        return user.principal if user else None

    def has_users(self) -> bool:
        """Whether any user exists (auth is on then). Asked on every request, so the answer
        is kept for a second; this process's own changes take effect at once."""
        now = time.monotonic()
        if now - self._users_checked[1] > 1.0:
            self._users_checked = (self.store.users.any(), now)
        return self._users_checked[0]

    # conversations ----------------------------------------------------------------------
    def start_conversation(self, chatbot: str, title: str = "", *,
                           user: Optional[Principal] = None) -> Conversation:
        return self.store.create_conversation(self.store.get_chatbot(chatbot), title,
                                              owner=user.owner if user else None)

    def list_conversations(self, chatbot: Optional[str] = None, *, limit: int = 100,
                           offset: int = 0, user: Optional[Principal] = None
                           ) -> list[Conversation]:
        bot = self.store.get_chatbot(chatbot) if chatbot else None
        owner = user.owner if user is not None and not user.is_admin else None
        return self.store.list_conversations(bot, limit=limit, offset=offset, owner=owner)

    def get_conversation(self, conversation_id: str, *,
                         user: Optional[Principal] = None) -> Conversation:
        """The conversation if `user` may see it; NotFoundError otherwise (also for a
        conversation that exists but is someone else's: its id is not confirmed)."""
        conv = self.store.get_conversation(conversation_id)
        if user is not None and not user.is_admin and conv.owner != user.owner:
            raise NotFoundError(f"no conversation {conversation_id!r}")
        return conv

    def messages(self, conversation_id: str, *,
                 user: Optional[Principal] = None) -> list[StoredMessage]:
        self.get_conversation(conversation_id, user=user)
        return self.store.list_messages(conversation_id)

    def delete_conversation(self, conversation_id: str, *,
                            user: Optional[Principal] = None) -> None:
        self.get_conversation(conversation_id, user=user)
        self.store.delete_conversation(conversation_id)
