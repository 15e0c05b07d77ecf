"""What every process serving spaces shares: probes, the /version document, the space routes,
Kubernetes-style 404/405 answers and a lifespan that starts and stops its core.

The hub and the cluster simulator compose their own apps from these pieces plus their own routes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from apimachinery.errors import StatusError
from apiserver.api.codec import status_response
from apiserver.definitions import schema_release
from apiserver.spacepaths import ROOT, SEPARATOR
from apiserver.store import StorageFailed, StoreUnavailable, store_unavailable
from kubeclient.version import spacehub_version

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
CLUSTERS = "/clusters/"
log = logging.getLogger(__name__)
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


async def _store_takes_writes() -> str | None:
    return None


def probe_routes(core: Core, store_check: Callable[[], Awaitable[str | None]] = _store_takes_writes
                 ) -> list[BaseRoute]:
    """``/healthz``, ``/livez``, ``/readyz`` and ``/version``. ``store_check`` answers why the store refuses
    writes (a full disk), or None: the process is live then, serving reads and watches, but not ready."""
    async def healthz(_request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_request: Request) -> Response:
        if not core.ready:
            return PlainTextResponse("starting", status_code=503)
        problem = await store_check()
        if problem is not None:  # kube's readyz names the failed check
            return PlainTextResponse(f"[-]store failed: {problem}\nreadyz check failed", status_code=503)
        return PlainTextResponse("ok")

    async def version(_request: Request) -> Response:
        return JSONResponse(version_info())

    return [Route("/healthz", healthz), Route("/livez", healthz), Route("/readyz", readyz),
            Route("/version", version)]


def spaces_first(handle: Callable[[], SpaceHandler], app: ASGIApp,
                 elsewhere: Callable[[str], bool] = lambda _rest: False) -> ASGIApp:
    """``/clusters/<space>[/…]`` straight to the space API (``handle`` is looked up per request: the core builds
    it at startup), everything else to ``app``, and so are the space paths ``elsewhere`` claims (given what
    follows the space name). The space API answers its errors itself; going around the router and the
    framework's middleware saves a sixth of the CPU of a create, the hottest request there is."""
    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "") if scope["type"] == "http" else ""
        space, _, rest = path[len(CLUSTERS):].partition("/")
        if not path.startswith(CLUSTERS) or not space or elsewhere(rest):
            await app(scope, receive, send)
            return
        try:
            response = await handle()(Request(scope, receive), space, rest)
        except Exception as exc:
            failure = store_failure_status(exc)
            if failure is not None:
                response = status_response(failure)
            else:  # a bug, not the client's: kube's 500, and the traceback in the log
                log.exception("%s %s failed", scope.get("method"), path)
                response = status_response(StatusError(500, "InternalError", "an error on the server prevented the "
                                                       "request from succeeding"))
        await response(scope, receive, send)

    return dispatch


def space_path_aliases(app: ASGIApp, prefixes: tuple[str, ...] = (CLUSTERS,)) -> ASGIApp:
    """``<prefix>root:org:team/…`` to ``<prefix>org:team/…``: a space's path in a URL to its id, which every part
    of a server knows it by (``apiserver.spacepaths``), before anything else sees the request — authentication's
    path scoping, authorization, routing, metrics. ``<prefix>root/…`` is left alone: root's id is its path."""
    aliases = tuple((f"{prefix}{ROOT}{SEPARATOR}", prefix) for prefix in prefixes)

    async def rewrite(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            path: str = scope.get("path", "")
            for alias, canonical in aliases:
                if path.startswith(alias):
                    scope = {**scope, "path": canonical + path[len(alias):]}
                    raw: bytes | None = scope.get("raw_path")
                    if raw is not None and raw.startswith(alias.encode()):
                        scope["raw_path"] = canonical.encode() + raw[len(alias):]
                    break
        await app(scope, receive, send)

    return rewrite


async def send_status(scope: dict[str, Any], send: Any, err: StatusError) -> None:
    """Answer ``err`` as a Status: an HTTP response, or for a WebSocket handshake the same response instead of
    the upgrade (the ASGI denial-response extension; a server without it gets a close, which it answers 403)."""
    prefix = ""
    if scope["type"] == "websocket":
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008, "reason": err.message[:123]})
            return
        prefix = "websocket."
    body = err.to_json()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if err.retry_after is not None:
        headers.append((b"retry-after", str(err.retry_after).encode()))
    await send({"type": f"{prefix}http.response.start", "status": err.code, "headers": headers})
    await send({"type": f"{prefix}http.response.body", "body": body})


async def _not_found(_request: Request, _exc: Exception) -> Response:
    # Unknown paths answer like kube-apiserver: a Status, never a plain-text page.
    return status_response(StatusError(404, "NotFound", "the server could not find the requested resource"))


async def _method_not_allowed(_request: Request, _exc: Exception) -> Response:
    return status_response(StatusError(405, "MethodNotAllowed", "the server does not allow this method on the "
                                       "requested resource"))


def store_failure_status(exc: BaseException) -> StatusError | None:
    """The Status for a request the store failed, as kube-apiserver answers when etcd fails it; None when ``exc``
    is no store failure. While the database cannot be reached (a refused write, or a read): 503 with Retry-After,
    so clients retry (the writer logs the outage once). A write the database refused for want of space or a
    failing disk: 500 InternalError with the cause, as for etcd's space quota."""
    if isinstance(exc, StoreUnavailable) or (not isinstance(exc, StorageFailed) and store_unavailable(exc)):
        return StatusError(503, "ServiceUnavailable", f"the store is unavailable: {exc}", retry_after=1)
    if isinstance(exc, StorageFailed):
        return StatusError(500, "InternalError", f"the store refused the write, nothing was written: {exc}")
    return None


async def _storage_failed(_request: Request, exc: Exception) -> Response:
    failure = store_failure_status(exc)
    assert failure is not None
    return status_response(failure)


STATUS_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    404: _not_found, 405: _method_not_allowed, StorageFailed: _storage_failed}
