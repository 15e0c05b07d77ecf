"""What every process serving spaces shares: probes, the /version document, the space routes,
Kubernetes-style 404/405 answers and a lifespan that starts and stops its core.

The hub and the cluster simulator compose their own apps from these pieces plus their own routes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from spaces.definitions import schema_release
from spaces.errors import StatusError
from spaces.version import spacehub_version

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
SpaceHandler = Callable[[Request, str, str], Awaitable[Response]]


class Core(Protocol):
    ready: bool

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def version_info() -> dict[str, str]:
    major, minor, patch = schema_release().split(".")
    return {"major": major, "minor": minor, "gitVersion": f"v{major}.{minor}.{patch}+spacehub.{spacehub_version()}",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "python",
            "compiler": "cpython", "platform": "linux/amd64"}


def lifespan_of(core: Core) -> Callable[[Starlette], Any]:
    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await core.start()
        try:
            yield
        finally:
            await core.stop()

    return lifespan


def probe_routes(core: Core) -> list[BaseRoute]:
    async def healthz(_request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_request: Request) -> Response:
        return PlainTextResponse("ok") if core.ready else PlainTextResponse("starting", status_code=503)

    async def version(_request: Request) -> Response:
        return JSONResponse(version_info())

    return [Route("/healthz", healthz), Route("/livez", healthz), Route("/readyz", readyz),
            Route("/version", version)]


def space_routes(handle: Callable[[], SpaceHandler]) -> list[BaseRoute]:
    """``/clusters/<space>[/…]`` to the space API (``handle`` is looked up per request: the core
    builds it at startup)."""
    async def endpoint(request: Request) -> Response:
        params = request.path_params
        return await handle()(request, params["space"], params.get("path", ""))

    return [Route("/clusters/{space}", endpoint, methods=METHODS),
            Route("/clusters/{space}/{path:path}", endpoint, methods=METHODS)]


async def _not_found(_request: Request, _exc: Exception) -> Response:
    # Unknown paths answer like kube-apiserver: a Status, never a plain-text page.
    return JSONResponse(StatusError(404, "NotFound", "the server could not find the requested resource")
                        .to_status(), status_code=404)


async def _method_not_allowed(_request: Request, _exc: Exception) -> Response:
    return JSONResponse(StatusError(405, "MethodNotAllowed", "the server does not allow this method on the "
                                    "requested resource").to_status(), status_code=405)


STATUS_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    404: _not_found, 405: _method_not_allowed}
