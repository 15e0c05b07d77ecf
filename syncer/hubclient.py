"""The syncer's side of ``/syncer/v1`` (docs/sync-protocol.md): the stream, heartbeats and status.

Only outbound HTTPS, with aiohttp, through ``HTTPS_PROXY`` unless ``NO_PROXY`` names the hub (HTTP CONNECT
proxies; read once, not per request as aiohttp's ``trust_env`` does), and nothing here assumes the hub is
reached directly: a reverse proxy or load balancer in front of it works as long as it streams responses (the
hub sends ``X-Accel-Buffering: no`` and pings). aiohttp rather than httpx (which kr8s uses towards the
cluster) because a syncer's hub requests are its steady cost: a small POST over TLS takes about 80 µs of
client CPU with aiohttp against 470 µs with httpx, whose connection pool also re-checks every pooled
connection per request (measured; docs/benchmarks.md, "Syncers").
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from kubeclient.proxyenv import proxy_for
from kubeclient.session import UNREACHABLE
from syncer.bootstrap import Bootstrap

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30.0)
# The stream has no read timeout of its own: :meth:`HubClient.stream` watches for silence instead,
# because the allowed silence (three ping intervals) is only known from the hub's SYNCED message.
STREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0)
DEFAULT_PING_INTERVAL = 15.0
# Reconnecting to the hub (the sync stream, the pod tunnel) backs off to this at most, jittered so that a thousand
# syncers do not arrive at once: after a partition of any length a syncer is back within it, so its cluster
# converges within ~10 s of the link returning (issue 32), at the cost of one attempt per 2.5-5 s while cut off.
RECONNECT_MAX_SECONDS = 5.0
SILENT_PINGS = 3  # pings missed before the hub counts as gone
KEEPALIVE_SECONDS = 120.0


class HubError(Exception):
    """The hub answered with an error ``Status``, or could not be reached (code 0)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def _status_error(code: int, reason_phrase: str, body: bytes) -> HubError:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    text = body[:200].decode(errors="replace")
    return HubError(code, str(status.get("reason") or reason_phrase),
                    str(status.get("message") or text or reason_phrase))


@dataclass
class HubConnections:
    """HTTP sessions for the hub, shared by the syncers of one process (the token goes with each request):
    one for the streams, one for short requests (heartbeats, reports, events, upsync), one for the pod
    tunnels' WebSockets (each holds its connection while open). Open them in the event loop that uses them."""

    streams: aiohttp.ClientSession
    requests: aiohttp.ClientSession
    tunnels: aiohttp.ClientSession

    @classmethod
    def open(cls, bootstrap: Bootstrap, syncers: int = 1) -> HubConnections:
        ssl_context, proxy = bootstrap.ssl_context(), proxy_for(bootstrap.hub)
        return cls(streams=_session(ssl_context, proxy, syncers + 2),
                   requests=_session(ssl_context, proxy, syncers + 2),
                   tunnels=_session(ssl_context, proxy, syncers + 2))

    async def aclose(self) -> None:
        await self.streams.close()
        await self.requests.close()
        await self.tunnels.close()


def _session(ssl_context: ssl.SSLContext, proxy: str | None, max_connections: int) -> aiohttp.ClientSession:
    # Keep idle connections well past the heartbeat interval: a new TLS handshake per heartbeat costs
    # more CPU than everything else a syncer does while idle.
    connector = aiohttp.TCPConnector(ssl=ssl_context, limit=max_connections, keepalive_timeout=KEEPALIVE_SECONDS)
    return aiohttp.ClientSession(connector=connector, timeout=REQUEST_TIMEOUT, proxy=proxy)


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """The body's lines, however long (an UPSERT carries a whole object; aiohttp's own line reader stops at
    its buffer size)."""
    pending = bytearray()
    async for chunk in content.iter_any():
        pending += chunk
        if b"\n" in chunk:
            *complete, rest = pending.split(b"\n")
            pending = rest
            for line in complete:
                yield bytes(line)
    if pending:
        yield bytes(pending)


class HubClient:
    def __init__(self, bootstrap: Bootstrap, connections: HubConnections) -> None:
        self.bootstrap = bootstrap
        self.connections = connections
        self.requests = connections.requests
        self.base = f"{bootstrap.hub}/syncer/v1/targets/{bootstrap.sync_target}"
        self.headers = {"Authorization": f"Bearer {bootstrap.token}", "Accept": "application/json"}
        self.ping_interval = DEFAULT_PING_INTERVAL

    async def stream(self, since: int, epoch: str) -> AsyncIterator[dict[str, Any]]:
        """The stream's messages until the hub ends it; :class:`HubError` when it fails or falls silent."""
        params = {"since": str(since)} | ({"epoch": epoch} if epoch else {})
        try:
            async with self.connections.streams.get(f"{self.base}/stream", params=params, headers=self.headers,
                                                    timeout=STREAM_TIMEOUT) as response:
                if response.status != 200:
                    raise _status_error(response.status, response.reason or "", await response.read())
                async with contextlib.aclosing(_lines(response.content)) as lines:
                    while True:
                        try:
                            async with asyncio.timeout(self.ping_interval * SILENT_PINGS):
                                line = await anext(lines)
                        except StopAsyncIteration:
                            return
                        except TimeoutError:
                            raise HubError(0, "Timeout", f"no message from the hub for "
                                                         f"{self.ping_interval * SILENT_PINGS:.0f}s") from None
                        if not line.strip():
                            continue
                        message = orjson.loads(line)
                        if message.get("type") == "SYNCED" and message.get("pingInterval"):
                            self.ping_interval = float(message["pingInterval"])
                        yield message
        except UNREACHABLE as exc:
            raise HubError(0, "Unavailable", f"hub unreachable: {exc!r}") from None
        except orjson.JSONDecodeError as exc:
            raise HubError(0, "BadResponse", f"the hub sent a line that is not JSON: {exc}") from None

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with self.requests.post(f"{self.base}/{path}", data=orjson.dumps(body),
                                          headers={**self.headers, "Content-Type": "application/json"}) as response:
                code, reason, content = response.status, response.reason or "", await response.read()
        except UNREACHABLE as exc:
            raise HubError(0, "Unavailable", f"hub unreachable: {exc!r}") from None
        if code != 200:
            raise _status_error(code, reason, content)
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise HubError(0, "BadResponse", f"the hub answered {path} with something that is not a JSON object: "
                                             f"{content[:200].decode(errors='replace')}")
        return answer

    async def heartbeat(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._post("heartbeat", body)

    async def report(self, objects: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("status", {"objects": objects})

    async def events(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("events", {"events": events})

    async def upsync(self, objects: list[dict[str, Any]], complete: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("upsync", {"objects": objects, "complete": complete})
