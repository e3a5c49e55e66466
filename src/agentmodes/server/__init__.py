"""The HTTP face: REST, WebSocket and SSE streaming, an OpenAI-compatible API and a web page.

    from agentmodes.server import create_app, ServerConfig
"""

from .app import create_app
from .config import ServerConfig

__all__ = ["create_app", "ServerConfig"]
