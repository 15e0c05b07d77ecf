"""The syncer's end of the pod tunnel towards its cluster: each stream the hub opens, checked against the
tunnel's rules (``kubeclient.tunnel.rules``, the same ones the hub applied) and performed with the syncer's own
cluster credentials.

HTTP responses go back as they arrive (a followed log line by line, a watch event by event), never buffered
whole: a chunk is read from the cluster only once the hub has room for it. WebSocket upgrades (exec, attach,
port-forward) are opened to the cluster with the subprotocols the client offered, and messages are relayed
one by one both ways, close codes included. Through the cluster's one connection pool
(``kubeclient.session``), with the syncer's credentials for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from http import HTTPStatus
from typing import Any

import aiohttp
from yarl import URL

from apimachinery.errors import StatusError
from kubeclient.session import UNREACHABLE, ClusterHTTP
from kubeclient.tunnel import rules
from kubeclient.tunnel.frames import MAX_MESSAGE, Kind
from kubeclient.tunnel.stream import Closed, Stream, failure

log = logging.getLogger(__name__)
ECHO_SECONDS = 10.0  # for the hub to answer a WebSocket close the cluster started


def _refusal(code: int, message: str) -> dict[str, Any]:
    try:
        reason = HTTPStatus(code).phrase.replace(" ", "")
    except ValueError:
        reason = "Unknown"
    return failure(code, reason, message)


class ClusterRelay:
    def __init__(self, http: ClusterHTTP, target: str) -> None:
        """``http``: the cluster's connection pool (``syncer.cluster.Cluster.http``); the relay does not close it."""
        self.http = http
        self.target = target

    async def handle(self, stream: Stream) -> None:
        """Serve one stream the hub opened (``kubeclient.tunnel.mux.Session``'s ``on_open``)."""
        request = stream.request
        method, path, query = str(request.get("method")), str(request.get("path")), str(request.get("query") or "")
        upgrade = request.get("upgrade")
        try:
            rules.check(method, path, query, upgrade=upgrade is not None)
            offered = rules.check_subprotocols(upgrade) if upgrade is not None else []
        except StatusError as exc:
            # The hub checks the same rules first, so this is a hub that should not be trusted with more.
            log.info("syncer %s: refused a request through the tunnel: %s", self.target, exc.message)
            stream.reset(exc.to_status())
            return
        log.debug("syncer %s: tunnel stream %d: %s %s", self.target, stream.id, method, rules.shown(path))
        url = self.http.url(path, query)
        headers = rules.forwarded(request.get("headers") or [], rules.REQUEST_HEADERS)
        if upgrade is None:
            await self._http_request(stream, method, url, headers)
        else:
            await self._websocket(stream, url, headers, offered)

    # --- HTTP -------------------------------------------------------------------------------------

    async def _http_request(self, stream: Stream, method: str, url: URL, headers: list[tuple[str, str]]) -> None:
        body = await _request_body(stream)
        if body is None:
            return
        try:
            response = await self.http.request(method, url, headers, body)
        except UNREACHABLE as exc:
            stream.reset(_refusal(503, f"the cluster cannot be reached: {exc!r}"))
            return
        async with response:
            stream.respond({"status": response.status, "subprotocol": None, "headers": [
                list(pair) for pair in rules.forwarded(response.headers.items(), rules.RESPONSE_HEADERS)]})
            try:
                async for chunk in response.content.iter_any():
                    await stream.send_body(chunk)  # waits while the hub is a window ahead of its reader
            except UNREACHABLE as exc:
                stream.reset(_refusal(503, f"the cluster's response broke off: {exc!r}"))
                return
        stream.end()

    # --- WebSocket --------------------------------------------------------------------------------

    async def _websocket(self, stream: Stream, url: URL, headers: list[tuple[str, str]], offered: list[str]) -> None:
        try:
            ws = await self.http.ws_connect(url, headers, offered, MAX_MESSAGE)
        except aiohttp.WSServerHandshakeError as exc:
            stream.reset(_refusal(exc.status or 502, f"the cluster refused the WebSocket: {exc.status} {exc.message}"))
            return
        except UNREACHABLE as exc:
            stream.reset(_refusal(503, f"the cluster cannot be reached: {exc!r}"))
            return
        stream.respond({"status": 101, "headers": [], "subprotocol": ws.protocol})
        async with ws:
            to_cluster = asyncio.create_task(_to_cluster(stream, ws))
            try:
                code, reason = await _from_cluster(stream, ws)
                if code is None:  # not closed by the cluster: by the hub (its answer has the code), or broken
                    if stream.got_end:
                        await asyncio.gather(to_cluster, return_exceptions=True)
                    code = ws.close_code if ws.close_code is not None else 1006
                stream.end(code, reason)
                async with asyncio.timeout(ECHO_SECONDS):
                    await to_cluster  # until the hub answers the close (or started it)
            except TimeoutError:
                stream.reset(_refusal(504, "the hub did not answer the WebSocket's close"))
            finally:
                to_cluster.cancel()
                await asyncio.gather(to_cluster, return_exceptions=True)


async def _request_body(stream: Stream) -> bytes | None:
    """The hub's request body (a DELETE's options), up to its END; None if the stream was reset instead."""
    parts: list[bytes] = []
    size = 0
    while True:
        frame = await stream.next()
        if frame.kind == Kind.END:
            return b"".join(parts)
        if frame.kind == Kind.DATA:
            size += len(frame.payload)
            if size > rules.MAX_REQUEST_BODY:
                stream.reset(_refusal(413, f"a tunnel request body is at most {rules.MAX_REQUEST_BODY} bytes"))
                return None
            parts.append(frame.payload)


async def _from_cluster(stream: Stream, ws: aiohttp.ClientWebSocketResponse) -> tuple[int | None, str]:
    """Relay the cluster's messages to the hub until its WebSocket closes: the cluster's close code and reason,
    or None when it was closed from this side or broke."""
    while True:
        message = await ws.receive()
        if message.type == aiohttp.WSMsgType.BINARY:
            await stream.send_message(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await stream.send_message(message.data.encode(), text=True)
        elif message.type == aiohttp.WSMsgType.CLOSE:
            return int(message.data), str(message.extra or "")
        elif message.type in (aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            return None, ""


async def _to_cluster(stream: Stream, ws: aiohttp.ClientWebSocketResponse) -> None:
    """Relay the hub's messages to the cluster until the hub closes (then close the cluster's WebSocket)."""
    while True:
        item = await stream.receive_message()
        if isinstance(item, Closed):
            await ws.close(code=item.sendable_code, message=item.reason.encode())
            return
        with contextlib.suppress(ConnectionError):  # the cluster went away: _from_cluster sees it close
            if item.text:
                await ws.send_str(item.data.decode(errors="replace"))
            else:
                await ws.send_bytes(item.data)
