"""The FastAPI application factory: routes, error mapping, limits, CORS, the web page.

    app = create_app(service, ServerConfig.from_env())

Errors users can act on become JSON {"detail": "..."} with a fitting status (404 unknown
chatbot/conversation, 409 duplicate name, 422 bad settings or upload); anything else is a
500 whose body says nothing about the server's internals.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..errors import AgentModesError, ConfigError
from ..service import AgentChatService
from ..store.chat import ConflictError, NotFoundError
from . import openai_compat, routes_chatbots, routes_conversations, routes_sources, routes_stream
from . import routes_compare
from .config import ServerConfig
from .openai_errors import OpenAIErrorShape
from .uploads import UploadError

STATIC = Path(__file__).parent / "static"


def create_app(service: AgentChatService, config: ServerConfig | None = None) -> FastAPI:
    config = config or ServerConfig.from_env()
    app = FastAPI(title="agentmodes", version=__version__,
                  description="Chatbots on your documents with ACT, ReAct and ReflAct agents. "
                              "Bearer keys: AGENTMODES_API_KEY (admin), "
                              "AGENTMODES_CHAT_API_KEY (chat).",
                  max_body_size=config.max_request_bytes)
    app.state.service = service
    app.state.config = config

    @app.exception_handler(AgentModesError)
    async def _user_error(_request: Request, err: AgentModesError) -> JSONResponse:
        status = 400
        if isinstance(err, NotFoundError):
            status = 404
        elif isinstance(err, ConflictError):
            status = 409
        elif isinstance(err, (ConfigError, UploadError)):
            status = 422
        return JSONResponse({"detail": str(err)}, status_code=status)

    app.include_router(routes_chatbots.router)
    routes_chatbots.add_upload_route(app, config.max_upload_bytes)
    app.include_router(routes_conversations.router)
    app.include_router(routes_sources.router)
    app.include_router(routes_stream.router)
    app.include_router(routes_compare.router)
    app.include_router(openai_compat.router)

    @app.get("/api/health", tags=["server"])
    def health() -> dict:
        return {"status": "ok", "version": __version__, "auth": config.auth_enabled}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins,
                           allow_methods=["*"], allow_headers=["*"])
    # Added last, so outermost: errors from every other layer under /v1 get OpenAI's shape.
    app.add_middleware(OpenAIErrorShape)
    return app
