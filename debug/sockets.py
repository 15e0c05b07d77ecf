"""kubectl's exec, attach and port-forward WebSockets for a space's pods, relayed to the pod's cluster.

The cluster's WebSocket is opened first (through the tunnel, offering what kubectl offered), and kubectl's
is accepted only then, with the subprotocol the cluster chose; a refusal (403, the pod not found, the
cluster refusing the upgrade) denies kubectl's upgrade with the Status, so kubectl prints its message
(kubectl then falls back to SPDY, which ``debug.http`` answers with the same checks). Messages are relayed
as they are, binary or text, both ways, and a close on either side closes the other with its code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from starlette.websockets import WebSocket

from apimachinery.errors import StatusError, not_found
from apiserver.access import Authorizer
from apiserver.api.asgi import send_status
from debug.access import STREAMS, authorize
from debug.fleet import ClusterPods, pods_path
from debug.stored import StoredPods
from kubeclient.tunnel.stream import Closed, Message
from sync.tunnel import TunnelSocket

CLOSE_ANSWER_SECONDS = 5.0  # how long the cluster has to answer a close kubectl started before it is abandoned


class PodSockets:
    def __init__(self, fleet: ClusterPods, authorizer: Callable[[], Authorizer], stored: StoredPods) -> None:
        self.fleet = fleet
        self.authorizer = authorizer
        self.stored = stored

    async def handle(self, websocket: WebSocket) -> None:
        params = websocket.path_params
        space, namespace = str(params["space"]), str(params["namespace"])
        name, sub = str(params["name"]), str(params["sub"])
        shown = name  # what the pod is found by: for a stored Pod, its copy's name
        try:
            if sub not in STREAMS:
                raise not_found("pods", "", name)
            authorize(self.authorizer(), websocket.scope, space, "create", namespace, name, sub)
            shown, stored = await self.stored.target(space, namespace, name)
            located, _warnings = await self.fleet.locate(space, namespace, shown, stored)
            if located is None:
                raise not_found("pods", "", name)
            query = websocket.scope.get("query_string", b"").decode("latin-1")
            cluster = await self.fleet.tunnels().websocket(
                located.cluster, f"{pods_path(namespace, located.name)}/{sub}", query,
                list(websocket.scope.get("subprotocols") or ()))
        except StatusError as exc:
            if exc.code == 404:  # not where it was found: look for it anew next time
                self.fleet.forget(space, namespace, shown)
            await send_status(websocket.scope, websocket.send, exc)
            return
        async with cluster:
            await websocket.accept(subprotocol=cluster.subprotocol)
            await _relay(websocket, cluster)


async def _relay(websocket: WebSocket, cluster: TunnelSocket) -> None:
    """Both ways until either side closes; the other is closed with its code."""
    upstream = asyncio.create_task(_to_cluster(websocket, cluster))
    downstream = asyncio.create_task(_to_client(websocket, cluster))
    try:
        done, _ = await asyncio.wait((upstream, downstream), return_when=asyncio.FIRST_COMPLETED)
        if upstream in done and not downstream.done():  # kubectl closed: the cluster answers the close, or not
            await asyncio.wait((downstream,), timeout=CLOSE_ANSWER_SECONDS)
    finally:
        for task in (upstream, downstream):
            task.cancel()
        await asyncio.gather(upstream, downstream, return_exceptions=True)


async def _to_cluster(websocket: WebSocket, cluster: TunnelSocket) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            closed = Closed(int(message.get("code") or 1005), str(message.get("reason") or ""))
            await cluster.close(closed.sendable_code, closed.reason)
            return
        text = message.get("text")
        data = text.encode() if text is not None else message.get("bytes") or b""
        try:
            await cluster.send(Message(data, text=text is not None))
        except StatusError:  # the cluster's side is gone: its close comes the other way
            return


async def _to_client(websocket: WebSocket, cluster: TunnelSocket) -> None:
    while True:
        item = await cluster.receive()
        if isinstance(item, Closed):
            with contextlib.suppress(RuntimeError, OSError):  # kubectl went away meanwhile: nothing to tell it
                await websocket.close(item.sendable_code, item.reason)
            return
        with contextlib.suppress(RuntimeError, OSError):
            if item.text:
                await websocket.send({"type": "websocket.send", "text": item.data.decode(errors="replace")})
            else:
                await websocket.send({"type": "websocket.send", "bytes": item.data})
