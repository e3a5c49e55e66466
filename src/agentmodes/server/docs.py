"""/docs: Swagger UI served from this server, not from a CDN.

FastAPI's default /docs page loads Swagger UI's script from a public CDN into the server's
own origin, where it could read the API key the web page keeps. The same files ship in the
fastapi-offline package; we serve them under /docs-static and allow exactly the page's
one inline start-up script by its hash. Without that package /docs is simply absent
(/openapi.json still is).
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

_INLINE = re.compile(r"<script>(.*?)</script>", re.S)


def _csp(html: str) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in _INLINE.findall(html))
    return (f"default-src 'self'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")


def add_docs(app: FastAPI) -> None:
    try:
        static = resources.files("fastapi_offline") / "static"
    except ModuleNotFoundError:
        return
    app.mount("/docs-static", StaticFiles(directory=str(static)), name="docs-static")
    page = get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json",
                               title=f"{app.title} - API",
                               swagger_js_url="/docs-static/swagger-ui-bundle.js",
                               swagger_css_url="/docs-static/swagger-ui.css",
                               swagger_favicon_url="/docs-static/favicon.png",
                               swagger_ui_parameters=app.swagger_ui_parameters)
    html = page.body.decode()
    policy = _csp(html)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return HTMLResponse(html, headers={"Content-Security-Policy": policy})
