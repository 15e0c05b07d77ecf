"""The placement API's interactive documentation, served by the hub itself: Swagger UI's files come from the
swagger-ui-bundle package, not from a CDN, so the page works where the hub has no Internet access.

The page, its assets and the OpenAPI document hold no data and are served without a token (a browser cannot
send one to open the page); every call made from the page carries the bearer token entered with Authorize.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:  # the hub asks for public_paths at start and builds the API (add_docs) on its first request
    from fastapi import FastAPI

DOCS, ASSETS = "/docs", "/docs-assets"


def public_paths(mount: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """Exact paths and path prefixes (under ``mount``) that need no token."""
    return frozenset({f"{mount}{DOCS}", f"{mount}/openapi.json"}), (f"{mount}{ASSETS}/",)


def add_docs(app: FastAPI) -> None:
    from fastapi.openapi.docs import get_swagger_ui_html
    from swagger_ui_bundle import swagger_ui_path

    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get(DOCS, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} — docs",
                                   swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
                                   swagger_ui_parameters={"persistAuthorization": True})
