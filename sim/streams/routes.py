"""The pods' streaming subresources in front of the space API: an ASGI layer of the simulator's app.

``/clusters/<cluster>/api/v1/namespaces/<ns>/pods/<name>/(log|exec|attach|portforward)`` of a cluster this
process serves is answered here (HTTP for ``log``, WebSocket for the others); everything else, and these paths
of clusters served elsewhere (redirected there), goes on to the space API. Authentication happened before
(``sim.access.ClusterAuth``, for WebSocket upgrades too).

exec, attach and port-forward speak WebSocket only, as kubectl 1.37 first tries: ``v5.channel.k8s.io`` or
``v4.channel.k8s.io`` for exec and attach, ``SPDY/3.1+portforward.k8s.io`` for port-forward. A request that is
not a WebSocket upgrade (kubectl's fallback to SPDY, a plain GET or POST) gets the same checks (the pod, the
container, its state) and then ``400 BadRequest`` saying SPDY is not served, which kubectl prints.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import orjson
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from apimachinery.errors import StatusError, bad_request, method_not_allowed, not_found
from apiserver.watch import Entry
from sim.streams import channels, logs, portforward, targets
from sim.streams.container import container_view
from sim.streams.exec import ExecRequest, run_attach, run_exec
from sim.streams.socket import Socket

PATH = re.compile(r"^/clusters/([^/]+)/api/v1/namespaces/([^/]+)/pods/([^/]+)/(log|exec|attach|portforward)/?$")
log = logging.getLogger(__name__)
Obj = dict[str, Any]


class PodSource(Protocol):
    """What the streams read of a cluster: its pods (from the simulator's cache) and other objects."""

    def pod(self, cluster: str, namespace: str, name: str) -> Obj | None: ...

    async def lookup(self, cluster: str, resource: str, namespace: str, name: str) -> Obj | None: ...


def status_response(err: StatusError) -> Response:
    return JSONResponse(err.to_status(), status_code=err.code)


class PodStreams:
    def __init__(self, app: ASGIApp, source: PodSource, clusters: Collection[str],
                 owners: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.source = source
        self.clusters = frozenset(clusters)
        self.owners = owners or {}
        self.logs = logs.LogStore()

    # --- the pods' lifecycle and the server's ---------------------------------------------------

    def observe(self, entries: Sequence[Entry]) -> None:
        """A watch-bus listener: logs end when their pod stops running, and go with the pod."""
        for entry in entries:
            key = entry.row.key
            if key.resource != "pods" or key.space not in self.clusters:
                continue
            obj = entry.obj()
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            if entry.row.deleted:
                self.logs.forget(uid)
            elif (obj.get("status") or {}).get("phase") != "Running" or (obj.get("metadata") or {}).get(
                    "deletionTimestamp"):
                self.logs.end(uid)

    def drain(self) -> None:
        """The server is stopping: followed logs end, so their connections close."""
        self.logs.end_all()

    # --- requests -------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = PATH.match(scope.get("path", "")) if scope["type"] in ("http", "websocket") else None
        if match is None or (match.group(1) not in self.clusters and scope["type"] == "http"):
            await self.app(scope, receive, send)
            return
        cluster, namespace, name, sub = match.groups()
        if scope["type"] == "websocket":
            await self._websocket(WebSocket(scope, receive, send), cluster, namespace, name, sub)
            return
        request = Request(scope, receive)
        try:
            response = await self._http(request, cluster, namespace, name, sub)
        except StatusError as exc:
            response = status_response(exc)
        await response(scope, receive, send)

    async def _http(self, request: Request, cluster: str, namespace: str, name: str, sub: str) -> Response:
        if sub == "log":
            if request.method != "GET":
                raise method_not_allowed("the server does not allow this method on the requested resource")
            return await self._log(request.query_params, cluster, namespace, name)
        if request.method not in ("GET", "POST"):
            raise method_not_allowed("the server does not allow this method on the requested resource")
        self._check(request.query_params, cluster, namespace, name, sub)
        if "spdy" in request.headers.get("upgrade", "").lower():
            offered = portforward.PROTOCOL if sub == "portforward" else " or ".join(channels.PROTOCOLS)
            raise bad_request(f"SPDY is not served by this simulated cluster: "
                              f"{sub} needs a WebSocket with subprotocol {offered} (kubectl 1.31 or later)")
        raise bad_request("Upgrade request required")

    async def _log(self, query: QueryParams, cluster: str, namespace: str, name: str) -> Response:
        options = logs.LogOptions.parse(query, name)
        pod = targets.require_pod(self.source.pod(cluster, namespace, name), name)
        container = targets.choose_container(pod, options.container)
        if not (pod.get("spec") or {}).get("nodeName"):
            return Response(b"", media_type="text/plain")  # not scheduled: an empty log, as kube-apiserver answers
        targets.check_logs(pod, container, options.previous)
        found = self.logs.log(cluster, pod, container, options.previous)
        return StreamingResponse(logs.stream(found, options), media_type="text/plain")

    def _check(self, query: QueryParams, cluster: str, namespace: str, name: str,
               sub: str) -> tuple[Obj, ExecRequest | None, str]:
        """The pod, the exec or attach request and the container it reaches, refused as upstream refuses it."""
        pod = targets.require_pod(self.source.pod(cluster, namespace, name), name)
        if sub == "portforward":
            targets.check_scheduled(pod)
            phase = (pod.get("status") or {}).get("phase")
            if phase != "Running":
                raise bad_request(f"unable to forward port because pod is not running. Current status={phase}")
            return pod, None, ""
        request = ExecRequest.parse(query, attach=sub == "attach")
        container = targets.choose_container(pod, request.container)
        targets.check_running(pod, container)
        return pod, request, container

    async def _websocket(self, ws: WebSocket, cluster: str, namespace: str, name: str, sub: str) -> None:
        offered = list(ws.scope.get("subprotocols") or [])
        try:
            if cluster not in self.clusters:
                owner = self.owners.get(cluster)
                if owner is not None:
                    query = ws.scope.get("query_string", b"").decode()
                    await _deny(ws, Response(status_code=307, headers={
                        "Location": f"{owner}{ws.scope['path']}{'?' + query if query else ''}"}))
                    return
                raise StatusError(404, "NotFound", f'spaces.spacehub.io "{cluster}" not found', name=cluster,
                                  group="spacehub.io", kind="spaces")
            pod, request, container = self._check(ws.query_params, cluster, namespace, name, sub)
            wanted = (portforward.PROTOCOL,) if sub == "portforward" else channels.PROTOCOLS
            protocol = next((p for p in wanted if p in offered), None)
            if protocol is None:
                raise bad_request(f"unable to upgrade: none of the requested subprotocols {offered} is supported; "
                                  f"supported: {list(wanted)}")
        except StatusError as exc:
            await _deny(ws, status_response(exc))
            return
        try:
            await ws.accept(subprotocol=protocol)
        except (OSError, RuntimeError, WebSocketDisconnect):
            return  # the client left before the upgrade completed
        socket = Socket(ws)
        try:
            if request is None:
                session = portforward.PortForwardSession(socket, cluster, pod)
                await socket.run(session.feed, session.run())
            else:
                view = await container_view(cluster, pod, container,
                                            lambda r, ns, n: self.source.lookup(cluster, r, ns, n))
                if sub == "exec":
                    await run_exec(socket, request, view)
                else:
                    await run_attach(socket, request, view, self.logs.log(cluster, pod, container))
        except Exception:  # a bug: the client sees the connection close, the log tells why
            log.exception("%s of %s/%s/%s failed", sub, cluster, namespace, name)
        finally:
            await socket.close()

    # --- the admin endpoint ---------------------------------------------------------------------

    def add_lines(self, cluster: str, namespace: str, name: str, body: bytes) -> Obj:
        """``POST /sim/v1/clusters/<c>/namespaces/<ns>/pods/<pod>/log``: lines for a container's log."""
        if cluster not in self.clusters:
            raise not_found("clusters", "sim.spacehub.io", cluster)
        try:
            doc = orjson.loads(body or b"{}")
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"invalid JSON: {exc}") from None
        wanted, lines, previous = logs.ensure_lines(doc)
        pod = targets.require_pod(self.source.pod(cluster, namespace, name), name)
        container = targets.choose_container(pod, wanted)
        targets.check_logs(pod, container, previous)
        found = self.logs.log(cluster, pod, container, previous)
        added = found.append(lines)
        return {"cluster": cluster, "namespace": namespace, "pod": name, "container": container,
                "previous": previous, "added": added, "lines": len(found.lines)}


async def _deny(ws: WebSocket, response: Response) -> None:
    """Refuse an upgrade with an HTTP response (kubectl reads a Status from it), else with a close."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(response)
    else:
        await ws.close(1008)
