"""``/clusters/<kube space>/…``: each request authorized at the hub, then forwarded to the space's API server.

Authorization is the hub's, with the request's own attributes (kube's RequestInfo), asked of the **parent**
space: entering the kube space is ``access`` on ``spaces/content`` there, as for every space, and the request
itself needs what RBAC in the parent allows. The API server's own RBAC then judges the kubeconfig's identity,
which every caller shares (docs/spaces.md, "Kube spaces").

Forwarding streams both ways: the request body goes up as it arrives, the response comes down chunk by
chunk as the server sends it (a watch stays open for as long as the server keeps it, and ends when its
client goes away or the hub stops). Headers pass unchanged except the hop-by-hop ones, ``Host``, the
caller's ``Authorization`` (replaced by the kubeconfig's) and ``Impersonate-*`` (the hub authorized the
caller, not whoever it names). The server's answers, errors included, come back as they are; a server that
cannot be reached is kube's 503 ``ServiceUnavailable`` naming the space. One answer is rewritten: the
``/openapi/v3`` index, whose URLs carry the server's own path. WebSocket upgrades (exec, attach,
port-forward) are refused with a Status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import orjson
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from apimachinery.errors import StatusError
from apiserver.access import Attributes, Authorizer, entering, require
from apiserver.api.asgi import CLUSTERS, send_status
from apiserver.api.codec import status_response
from apiserver.api.handlers import request_verb
from apiserver.api.paths import parse_resource_path
from apiserver.api.reviews import ANONYMOUS
from apiserver.identity import of_request
from apiserver.spacepaths import full_path
from spaces.providers.kubespaces import KubeSpace, KubeSpaces
from spaces.providers.upstream import ProviderError, Upstream, unreachable

log = logging.getLogger(__name__)
# RFC 9110 §7.6.1, plus what the hub itself sets or must not pass on.
DROPPED_REQUEST = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                             "trailer", "transfer-encoding", "upgrade", "host", "authorization"})
DROPPED_RESPONSE = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                              "trailer", "transfer-encoding", "upgrade"})
IMPERSONATE = "impersonate-"
OPENAPI_INDEX = "openapi/v3"


def unavailable(space: KubeSpace, why: str) -> StatusError:
    # No Retry-After, as kube-aggregator answers for an API service it cannot reach: client-go would retry each
    # request ten times, and kubectl's discovery alone would then take most of a minute to fail.
    return StatusError(503, "ServiceUnavailable", f'the API server of space "{space.path}" is not available: {why}')


def _attributes(request: Request, segs: list[str]) -> Attributes:
    rp = parse_resource_path(segs)
    if rp is None:  # discovery, OpenAPI, /version: non-resource requests, as on kube-apiserver
        return Attributes(verb=request.method.lower(), path="/" + "/".join(segs))
    return Attributes(verb=request_verb(request, rp), namespace=rp.namespace or "", group=rp.group,
                      version=rp.version, resource=rp.plural, subresource=rp.subresource, name=rp.name or "")


def _request_headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    headers = [(k, v) for k, v in scope["headers"]
               if k.decode("latin-1").lower() not in DROPPED_REQUEST and not k.lower().startswith(IMPERSONATE.encode())]
    if not any(k.lower() == b"accept-encoding" for k, _ in headers):
        # The body is passed on as the server encodes it: only in an encoding the caller asked for.
        headers.append((b"accept-encoding", b"identity"))
    return headers


def _has_body(scope: Scope) -> bool:
    headers = dict(scope["headers"])
    return b"transfer-encoding" in headers or headers.get(b"content-length", b"0") != b"0"


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class KubeSpaceProxy:
    def __init__(self, spaces: KubeSpaces, authorizer: Callable[[], Authorizer]) -> None:
        self.spaces = spaces
        self.authorizer = authorizer  # looked up per request: the core builds it at startup
        self._closing = asyncio.Event()

    def close(self) -> None:
        """The server is stopping: end the responses being streamed (watches), now and from now on."""
        self._closing.set()

    def claims(self, scope: Scope) -> KubeSpace | None:
        """The kube space a request is for; None when it is for anything else."""
        path: str = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or not path.startswith(CLUSTERS):
            return None
        return self.spaces.get(path[len(CLUSTERS):].partition("/")[0])

    async def __call__(self, space: KubeSpace, scope: Scope, receive: Receive, send: Send) -> None:
        rest = scope["path"][len(CLUSTERS) + len(space.id):].lstrip("/")
        try:
            self._authorize(space, Request(scope, receive), rest)
            if scope["type"] == "websocket":
                raise StatusError(400, "BadRequest", f'space "{space.path}" is served by a Kubernetes API server; '
                                  "the hub does not forward WebSocket upgrades (exec, attach, port-forward) to it")
            try:
                upstream = await self.spaces.upstream(space.id)
            except ProviderError as exc:
                raise unavailable(space, exc.message) from None
            await self._forward(space, upstream, rest, scope, receive, send)
        except StatusError as exc:
            if scope["type"] == "http":
                await status_response(exc)(scope, receive, send)
            else:
                await send_status(scope, send, exc)

    def _authorize(self, space: KubeSpace, request: Request, rest: str) -> None:
        who = of_request(request.scope) or ANONYMOUS
        authorizer = self.authorizer()
        require(authorizer, space.parent, who, entering(space.name))
        try:
            require(authorizer, space.parent, who, _attributes(request, [s for s in rest.split("/") if s]))
        except StatusError as exc:
            exc.message += f' (space "{space.path}" is served by a Kubernetes API server: its requests are ' \
                           f'authorized by RBAC in its parent space "{full_path(space.parent)}")'
            raise

    async def _forward(self, space: KubeSpace, upstream: Upstream, rest: str, scope: Scope, receive: Receive,
                       send: Send) -> None:
        request = upstream.proxy_client.build_request(
            scope["method"], upstream.url(rest, scope.get("query_string", b"")), headers=_request_headers(scope),
            content=_body(receive) if _has_body(scope) else None)
        try:
            response = await upstream.proxy_client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise unavailable(space, f"{upstream.server}: {unreachable(exc)}") from None
        try:
            headers = [(k.lower(), v) for k, v in response.headers.raw
                       if k.decode("latin-1").lower() not in DROPPED_RESPONSE]
            if rest.rstrip("/") == OPENAPI_INDEX and scope["method"] == "GET" and response.status_code == 200:
                await self._send_openapi_index(space, upstream, response, headers, send)
                return
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            await self._stream(response, receive, send)
        finally:
            await response.aclose()

    async def _stream(self, response: httpx.Response, receive: Receive, send: Send) -> None:
        """The body as the server sends it, until it ends, the client goes away or the hub stops."""
        async def pump() -> None:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

        pumping = asyncio.ensure_future(pump())
        waits = [pumping, asyncio.ensure_future(_disconnected(receive)), asyncio.ensure_future(self._closing.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            for task in waits:
                with contextlib.suppress(asyncio.CancelledError, httpx.TransportError):
                    await task
        # A body cut short by the server ends the response as the server did; the client sees it end.
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_openapi_index(self, space: KubeSpace, upstream: Upstream, response: httpx.Response,
                                  headers: list[tuple[bytes, bytes]], send: Send) -> None:
        """``serverRelativeURL``s name the server's own path (``/clusters/wec1/openapi/v3/…`` on a simulated
        cluster): clients resolve them against the hub, so they are rewritten to the space's."""
        try:
            index: dict[str, Any] = orjson.loads(await response.aread())
        except (orjson.JSONDecodeError, httpx.TransportError) as exc:
            raise unavailable(space, f"its OpenAPI index cannot be read: {exc}") from None
        base, own = upstream.base_path, f"{CLUSTERS}{space.id}"
        for entry in (index.get("paths") or {}).values():
            url = entry.get("serverRelativeURL") if isinstance(entry, dict) else None
            if isinstance(url, str) and url.startswith(f"{base}/openapi/"):
                entry["serverRelativeURL"] = own + url[len(base):]
        body = orjson.dumps(index)
        kept = [(k, v) for k, v in headers if k not in (b"content-length", b"content-encoding")]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*kept, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def kube_spaces_first(proxy: Callable[[], KubeSpaceProxy | None], app: ASGIApp) -> ASGIApp:
    """Requests for a kube space to the proxy (looked up per request: None until the server has started),
    everything else to ``app``."""
    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        found = proxy()
        space = None if found is None else found.claims(scope)
        if found is None or space is None:
            await app(scope, receive, send)
        else:
            await found(space, scope, receive, send)

    return dispatch
