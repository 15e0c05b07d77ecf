"""Where the hub serves the web UI: the page, its static files and the fleet's object counts.

The page and its files hold no data and are served without a token (a browser cannot send one to open a
page); everything the page shows comes from requests carrying the user's bearer token. ``/ui/v1/fleet``
is authorized by the hub like the placement API's cluster list (``hub.access``: a list of the inventory
space's SyncTargets). The page's Content-Security-Policy allows only the hub's own origin, so a page that
tried to load anything from elsewhere would fail in the browser, not quietly work while online.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from html import escape
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from apiserver.api.codec import json_response
from placement.service import PlacementService
from ui.fleet import object_counts

UI = "/ui"
STATIC = "/ui/static"
FLEET = "/ui/v1/fleet"
STATIC_DIR = Path(__file__).resolve().parent / "static"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def public_paths() -> tuple[frozenset[str], tuple[str, ...]]:
    """Exact paths and path prefixes that need no token: the page and its files."""
    return frozenset({UI, f"{UI}/"}), (f"{STATIC}/",)


@cache
def _page_template() -> str:
    return (STATIC_DIR / "index.html").read_text(encoding="utf-8")


def ui_routes(placement: Callable[[], PlacementService], inventory_space: str) -> list[BaseRoute]:
    """``placement`` is looked up per request: the core builds it at startup."""
    page = _page_template().replace("{{inventory}}", escape(inventory_space, quote=True))

    async def index(_request: Request) -> Response:
        return HTMLResponse(page, headers=HEADERS)

    async def to_index(_request: Request) -> Response:
        return RedirectResponse(f"{UI}/", status_code=308)

    async def fleet(_request: Request) -> Response:
        service = placement()
        return json_response({"kind": "FleetObjectCounts", "items": object_counts(service.engine, service.inventory)})

    return [Route(UI, to_index), Route(f"{UI}/", index), Route(FLEET, fleet),
            Mount(STATIC, app=StaticFiles(directory=str(STATIC_DIR)), name="ui-static")]
