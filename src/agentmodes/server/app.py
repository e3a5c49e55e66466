"""The FastAPI application factory: routes, error mapping, limits, guards, the web page.

    app = create_app(service, ServerConfig.from_env())

Errors users can act on become JSON {"detail": "..."} with a fitting status (404 unknown
chatbot/conversation, 409 duplicate name, 422 bad settings, upload or request body, 429
busy or rate-limited with Retry-After); anything else is a 500 whose body says nothing
about the server's internals. A 422 names the field and the rule, never echoes the input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..errors import AgentModesError, ConfigError
from ..service import AgentChatService
from ..store.chat import ConflictError, NotFoundError
from ..store.users import UserError
from . import (docs, openai_compat, routes_chatbots, routes_compare, routes_conversations,
               routes_sources, routes_stream, routes_users)
from .admission import Busy, RateLimiter, RunPool
from .config import ServerConfig
from .guard import KeylessGuard, SecurityHeaders
from .openai_errors import OpenAIErrorShape
from .routes_stream import SocketCount
from .uploads import UploadError

STATIC = Path(__file__).parent / "static"
MAX_ERROR_CHARS = 300


class SafeJSONResponse(JSONResponse):
    """JSON as UTF-8; text that cannot be UTF-8 (a lone surrogate stored before requests
    were checked for it) goes out as a JSON escape instead of failing the whole response."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")


def _validation_detail(err: RequestValidationError) -> list[dict]:
    """Where and why, without the input (which may be huge or not encodable)."""
    return [{"loc": list(e.get("loc", ())), "type": e.get("type", ""),
             "msg": str(e.get("msg", ""))[:MAX_ERROR_CHARS]} for e in err.errors()[:20]]


def create_app(service: AgentChatService, config: ServerConfig | None = None) -> FastAPI:
    config = config or ServerConfig.from_env()
    app = FastAPI(title="agentmodes", version=__version__,
                  description="Chatbots on your documents with ACT, ReAct and ReflAct agents. "
                              "Bearer keys: AGENTMODES_API_KEY (admin), "
                              "AGENTMODES_CHAT_API_KEY (chat), or a user's own key.",
                  max_body_size=config.max_request_bytes, docs_url=None, redoc_url=None,
                  default_response_class=SafeJSONResponse)
    app.state.service = service
    app.state.config = config
    app.state.run_pool = RunPool(config.run_workers, config.run_queue)
    app.state.rate_limiter = RateLimiter({"chat": config.rate_chat,
                                          "upload": config.rate_upload})
    app.state.sockets = SocketCount()

    @app.exception_handler(AgentModesError)
    async def _user_error(_request: Request, err: AgentModesError) -> JSONResponse:
        status = 400
        if isinstance(err, NotFoundError):
            status = 404
        elif isinstance(err, ConflictError):
            status = 409
        elif isinstance(err, (ConfigError, UploadError, UserError)):
            status = 422
        return SafeJSONResponse({"detail": str(err)[:2000]}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_request: Request, err: RequestValidationError) -> JSONResponse:
        return SafeJSONResponse({"detail": _validation_detail(err)}, status_code=422)

    @app.exception_handler(Busy)
    async def _busy(_request: Request, err: Busy) -> JSONResponse:
        return SafeJSONResponse({"detail": str(err)}, status_code=429,
                                headers={"Retry-After": str(err.retry_after)})

    app.include_router(routes_chatbots.router)
    routes_chatbots.add_upload_route(app, config.max_upload_bytes)
    app.include_router(routes_conversations.router)
    app.include_router(routes_sources.router)
    app.include_router(routes_stream.router)
    app.include_router(routes_users.router)
    app.include_router(routes_compare.router)
    app.include_router(openai_compat.router)
    docs.add_docs(app)

    @app.get("/api/health", tags=["server"])
    async def health() -> dict:
        # async, off the thread pool: it answers while every run slot is taken.
        pool: RunPool = app.state.run_pool
        return {"status": "ok", "version": __version__, "auth": config.auth_enabled
                or service.has_users(), "runs": {"running": pool.running,
                                                  "waiting": pool.waiting}}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins,
                           allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(KeylessGuard, config=config)
    # Added after the others, so outside them: errors from every other layer under /v1 get
    # OpenAI's shape, and every response the security headers.
    app.add_middleware(OpenAIErrorShape)
    app.add_middleware(SecurityHeaders)
    return app
