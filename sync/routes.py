"""The HTTP layer of ``/syncer/v1``: routes, request bodies, identities, and errors as ``Status`` objects.

Owns only parsing and rendering (shapes in docs/sync-protocol.md); the work is ``SyncServer``'s. Tokens
are checked by the hub's authenticator before a request gets here (a syncer token reaches only its own
target's paths; WebSockets are authenticated like any request); the handlers check the identity again so
that no other mounting can widen it. The tunnel is a WebSocket only that target's syncer may open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from apimachinery import errors
from apiserver.api.codec import answering_errors, json_response, status_response
from apiserver.identity import of_request
from inventory.credentials import SYNCERS, syncer_identity
from inventory.kinds import EDGE_GROUP
from placement.api_errors import validation_status
from placement.model import ObjectRef
from status.service import ClusterEvent, ObjectReport
from status.upsync import UpsyncItem
from sync.direct import SERVER_SEND, DirectSink
from sync.messages import CONTENT_TYPE
from sync.server import SyncServer

MAX_REPORTS = 10_000  # objects per status POST
MAX_EVENTS = 100  # events per events POST
MAX_EVENT_MESSAGE = 4096
STREAM_HEADERS = {"Cache-Control": "no-cache, no-store", "X-Accel-Buffering": "no"}
_PREFIX = "/syncer/v1/targets/"


class _Body(BaseModel):
    """camelCase on the wire; unknown fields are ignored so that newer syncers can talk to older hubs."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              extra="ignore")


class ClusterReach(_Body):
    reachable: bool
    message: str = Field(default="", max_length=1024)


class HeartbeatRequest(_Body):
    capacity: dict[str, str | int] | None = None
    allocatable: dict[str, str | int] | None = None
    syncer_version: str = ""
    cluster: ClusterReach | None = None  # whether the cluster answers the syncer (absent: not known)


class DriftEntry(_Body):
    path: str = Field(min_length=1, max_length=1000)
    manager: str = Field(default="", max_length=256)
    time: str = ""
    corrected: bool = False


class ReportedObject(_Body):
    space: str = Field(min_length=1)
    group: str = ""
    resource: str = Field(min_length=1)
    namespace: str = ""
    name: str = Field(min_length=1)
    generation: int | None = None
    status: dict[str, Any] | None = None
    error: str | None = None
    drift_corrections: int = Field(default=0, ge=0)
    last_drift_correction: str | None = None
    applied_revision: str | None = None
    associated: dict[str, Any] | None = None
    drift: list[DriftEntry] = Field(default_factory=list, max_length=100)
    retained: dict[str, Any] | None = None


class StatusRequest(_Body):
    objects: list[ReportedObject] = Field(max_length=MAX_REPORTS)


class Regarding(_Body):
    kind: str = ""
    namespace: str = ""
    name: str = ""


class ForwardedEvent(_Body):
    space: str = Field(min_length=1)
    group: str = ""
    resource: str = Field(min_length=1)
    namespace: str = ""
    name: str = Field(min_length=1)
    regarding: Regarding = Field(default_factory=Regarding)
    type: str = "Warning"
    reason: str = Field(default="", max_length=128)
    message: str = Field(default="", max_length=MAX_EVENT_MESSAGE)
    count: int = Field(default=1, ge=1)
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    source: str = Field(default="", max_length=128)


class EventsRequest(_Body):
    events: list[ForwardedEvent] = Field(max_length=MAX_EVENTS)


class UpsyncedObject(_Body):
    op: Literal["UPSERT", "DELETE"]
    space: str = Field(min_length=1)
    placement: str = ""
    group: str = ""
    version: str = Field(min_length=1)
    resource: str = Field(min_length=1)
    namespace: str = ""
    name: str = Field(min_length=1)
    object: dict[str, Any] | None = None


class UpsyncKind(_Body):
    space: str = Field(min_length=1)
    group: str = ""
    resource: str = Field(min_length=1)


class UpsyncRequest(_Body):
    objects: list[UpsyncedObject] = Field(default_factory=list, max_length=MAX_REPORTS)
    complete: list[UpsyncKind] = Field(default_factory=list, max_length=1000)


def _since(value: str | None) -> int:
    if value is None or value == "":
        return 0
    if not value.isdigit():
        raise errors.bad_request(f'since must be a non-negative integer (the seq of the last message applied), '
                                 f'got "{value}"')
    return int(value)


async def _body(request: Request, model: type[BaseModel]) -> Any:
    raw = await request.body()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise validation_status(exc.errors()) from None


class SyncerAPI:
    def __init__(self, hub: Callable[[], SyncServer]) -> None:
        self.hub = hub

    def _target(self, request: Request) -> str:
        """The addressed SyncTarget, after checking the identity may use it and that it exists."""
        name = str(request.path_params["name"])
        identity = of_request(request.scope)
        if identity is None or not (identity.admin or identity == syncer_identity(name)):
            who = identity.name if identity is not None else "anonymous"
            raise errors.forbidden(f'{who} may not use the syncer API of sync target "{name}"')
        if not self.hub().target_exists(name):
            raise errors.not_found("synctargets", EDGE_GROUP, name)
        return name

    async def stream(self, request: Request) -> Response:
        name = self._target(request)
        since = _since(request.query_params.get("since"))
        epoch = request.query_params.get("epoch") or None
        sink = DirectSink.of(request.scope.get(SERVER_SEND))
        return StreamingResponse(self.hub().stream(name, since, epoch, sink), media_type=CONTENT_TYPE,
                                 headers=STREAM_HEADERS)

    async def heartbeat(self, request: Request) -> Response:
        name = self._target(request)
        body: HeartbeatRequest = await _body(request, HeartbeatRequest)
        unreachable = body.cluster.message or "no answer" if body.cluster and not body.cluster.reachable else None
        return json_response(await self.hub().heartbeat(name, body.capacity, body.allocatable, body.syncer_version,
                                                        unreachable))

    async def status(self, request: Request) -> Response:
        name = self._target(request)
        body: StatusRequest = await _body(request, StatusRequest)
        items = [ObjectReport(_ref(o), o.status, o.error, o.generation, o.drift_corrections, o.last_drift_correction,
                              o.applied_revision, o.associated,
                              tuple(d.model_dump() for d in o.drift), o.retained)
                 for o in body.objects]
        return json_response(await self.hub().report(name, items))

    async def events(self, request: Request) -> Response:
        name = self._target(request)
        body: EventsRequest = await _body(request, EventsRequest)
        items = [ClusterEvent(_ref(e), e.regarding.kind, e.regarding.name, e.type, e.reason, e.message, e.count,
                              e.first_timestamp, e.last_timestamp, e.source) for e in body.events]
        return json_response(await self.hub().events(name, items))


    async def tunnel(self, websocket: WebSocket) -> None:
        """The syncer's pod tunnel: only that target's syncer may open it (not even the admin: it would stand
        in for the cluster)."""
        name = str(websocket.path_params["name"])
        identity = of_request(websocket.scope)
        if identity != syncer_identity(name):
            who = identity.name if identity is not None else "anonymous"
            await _deny(websocket, errors.forbidden(f'{who} may not open the tunnel of sync target "{name}": only '
                                                    f'its syncer may'))
        elif not self.hub().target_exists(name):
            await _deny(websocket, errors.not_found("synctargets", EDGE_GROUP, name))
        else:
            await websocket.accept()
            await self.hub().tunnels.serve(name, StarletteTransport(websocket))

    async def tunnel_without_upgrade(self, request: Request) -> Response:
        self._target(request)
        raise errors.bad_request("the tunnel is a WebSocket: send the request with Upgrade: websocket")

    async def tunnel_status(self, request: Request) -> Response:
        """A diagnostic for operators, so authorized by the hub's authorizer as the non-resource URL it is (the
        admin, or whom RBAC in the root space grants it); a syncer sees only its own target's."""
        name = str(request.path_params["name"])
        identity = of_request(request.scope)
        if identity is None or (SYNCERS in identity.groups and identity != syncer_identity(name)):
            raise errors.forbidden(f'{identity.name if identity else "anonymous"} may not see the tunnel of sync '
                                   f'target "{name}"')
        if not self.hub().target_exists(name):
            raise errors.not_found("synctargets", EDGE_GROUP, name)
        return json_response(self.hub().tunnels.status(name))

    async def upsync(self, request: Request) -> Response:
        name = self._target(request)
        body: UpsyncRequest = await _body(request, UpsyncRequest)
        if any(o.op == "UPSERT" and not isinstance(o.object, dict) for o in body.objects):
            raise errors.bad_request("every UPSERT carries the object")
        items = [UpsyncItem(o.op, o.space, o.placement, o.group, o.version, o.resource, o.namespace, o.name,
                            o.object) for o in body.objects]
        complete = [(k.space, k.group, k.resource) for k in body.complete]
        return json_response(await self.hub().upsync(name, items, complete))


async def _deny(websocket: WebSocket, err: errors.StatusError) -> None:
    """Refuse a WebSocket with an HTTP error and its Status, where the server can (uvicorn can); else close it."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(status_response(err))
    else:
        await websocket.close(1008, err.message[:123])


class StarletteTransport:
    """A tunnel WebSocket as ``kubeclient.tunnel.mux.Transport`` sees it."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket

    async def send(self, data: bytes) -> None:
        await self.websocket.send_bytes(data)

    async def receive(self) -> bytes | None:
        try:
            message = await self.websocket.receive()
        except (WebSocketDisconnect, RuntimeError):  # RuntimeError: receiving after the disconnect
            return None
        data = message.get("bytes")
        if message["type"] != "websocket.receive" or data is None:
            return None  # disconnected, or a text message, which the protocol never sends
        return bytes(data)

    async def close(self, code: int, reason: str) -> None:
        try:
            await self.websocket.close(code, reason)
        except RuntimeError:  # already closed
            return


def _ref(item: ReportedObject | ForwardedEvent) -> ObjectRef:
    return ObjectRef(item.space, f"{item.resource}.{item.group}" if item.group else item.resource, item.namespace,
                     item.name)


def syncer_routes(hub: Callable[[], SyncServer]) -> list[BaseRoute]:
    """The routes to mount at ``/syncer/v1``; ``hub`` gives the started ``SyncServer`` at request time."""
    api = SyncerAPI(hub)
    return [Route("/targets/{name}/stream", answering_errors(api.stream), methods=["GET"]),
            WebSocketRoute("/targets/{name}/tunnel", api.tunnel),
            Route("/targets/{name}/tunnel", answering_errors(api.tunnel_without_upgrade), methods=["GET"]),
            Route("/targets/{name}/tunnel/status", answering_errors(api.tunnel_status), methods=["GET"]),
            Route("/targets/{name}/heartbeat", answering_errors(api.heartbeat), methods=["POST"]),
            Route("/targets/{name}/status", answering_errors(api.status), methods=["POST"]),
            Route("/targets/{name}/events", answering_errors(api.events), methods=["POST"]),
            Route("/targets/{name}/upsync", answering_errors(api.upsync), methods=["POST"])]


def is_stream(scope: dict[str, Any]) -> bool:
    path = str(scope.get("path", ""))
    return scope.get("method") == "GET" and path.startswith(_PREFIX) and path.endswith("/stream")


def keeping_server_send(app: Any) -> Callable[..., Awaitable[None]]:
    """ASGI, outermost: a sync stream's scope keeps the ``send`` the server gave, for its direct writes."""

    async def outer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_stream(scope):
            scope[SERVER_SEND] = send
        await app(scope, receive, send)

    return outer


def streams_unlimited(limited: Any, unlimited: Any) -> Callable[..., Awaitable[None]]:
    """ASGI: sync streams skip the in-flight request limit (like watches, they are open for hours)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await (unlimited if scope["type"] == "http" and is_stream(scope) else limited)(scope, receive, send)

    return app
