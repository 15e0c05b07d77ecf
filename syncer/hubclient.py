"""The syncer's side of ``/syncer/v1`` (docs/sync-protocol.md): the stream, heartbeats and status.

Only outbound HTTPS. httpx honours ``HTTPS_PROXY``/``NO_PROXY`` (HTTP CONNECT proxies), and nothing
here assumes the hub is reached directly: a reverse proxy or load balancer in front of it works as
long as it streams responses (the hub sends ``X-Accel-Buffering: no`` and pings).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from syncer.bootstrap import Bootstrap

REQUEST_TIMEOUT = httpx.Timeout(30.0)
# The stream has no read timeout of its own: :meth:`HubClient.stream` watches for silence instead,
# because the allowed silence (three ping intervals) is only known from the hub's SYNCED message.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=None)
DEFAULT_PING_INTERVAL = 15.0
SILENT_PINGS = 3  # pings missed before the hub counts as gone
KEEPALIVE_SECONDS = 120.0


class HubError(Exception):
    """The hub answered with an error ``Status``, or could not be reached (code 0)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def _status_error(response: httpx.Response, body: bytes) -> HubError:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    text = body[:200].decode(errors="replace")
    return HubError(response.status_code, str(status.get("reason") or response.reason_phrase),
                    str(status.get("message") or text or response.reason_phrase))


REQUEST_CONNECTIONS = 3  # a syncer's heartbeat, status report and events may be under way at once


@dataclass
class HubConnections:
    """HTTP clients for the hub, shareable by many syncers of one hub (the token goes with each request).

    Streams share one pool; short requests (heartbeats, reports, events, upsync) get a small pool per syncer:
    httpcore checks every connection of a pool (a readability check each) whenever it places a request and
    whenever a response ends, so one pool for the requests of 500 syncers cost more CPU than their own work,
    and pools of ten still cost a fifth of a simulator process placing a thousand syncers' reports.
    """

    ssl_context: ssl.SSLContext
    streams: httpx.AsyncClient
    requests: list[httpx.AsyncClient] = field(default_factory=list)

    @classmethod
    def open(cls, bootstrap: Bootstrap, syncers: int = 1) -> HubConnections:
        ssl_context = bootstrap.ssl_context()
        return cls(ssl_context=ssl_context, streams=_client(ssl_context, syncers + 2))

    def request_pool(self) -> httpx.AsyncClient:
        """A pool of short-request connections for one more syncer."""
        pool = _client(self.ssl_context, REQUEST_CONNECTIONS)
        self.requests.append(pool)
        return pool

    async def aclose(self) -> None:
        await self.streams.aclose()
        for pool in self.requests:
            await pool.aclose()


def _client(ssl_context: ssl.SSLContext, max_connections: int) -> httpx.AsyncClient:
    # Keep idle connections well past the heartbeat interval: a new TLS handshake per heartbeat costs
    # more CPU than everything else a syncer does while idle.
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                          keepalive_expiry=KEEPALIVE_SECONDS)
    return httpx.AsyncClient(verify=ssl_context, timeout=REQUEST_TIMEOUT, limits=limits, trust_env=True)


class HubClient:
    def __init__(self, bootstrap: Bootstrap, connections: HubConnections) -> None:
        self.bootstrap = bootstrap
        self.connections = connections
        self.requests = connections.request_pool()
        self.base = f"{bootstrap.hub}/syncer/v1/targets/{bootstrap.sync_target}"
        self.headers = {"Authorization": f"Bearer {bootstrap.token}", "Accept": "application/json"}
        self.ping_interval = DEFAULT_PING_INTERVAL

    async def stream(self, since: int, epoch: str) -> AsyncIterator[dict[str, Any]]:
        """The stream's messages until the hub ends it; :class:`HubError` when it fails or falls silent."""
        params = {"since": str(since)} | ({"epoch": epoch} if epoch else {})
        try:
            async with self.connections.streams.stream("GET", f"{self.base}/stream", params=params,
                                                       headers=self.headers, timeout=STREAM_TIMEOUT) as response:
                if response.status_code != 200:
                    raise _status_error(response, await response.aread())
                lines = response.aiter_lines().__aiter__()
                while True:
                    try:
                        async with asyncio.timeout(self.ping_interval * SILENT_PINGS):
                            line = await lines.__anext__()
                    except StopAsyncIteration:
                        return
                    except TimeoutError:
                        raise HubError(0, "Timeout", f"no message from the hub for "
                                                     f"{self.ping_interval * SILENT_PINGS:.0f}s") from None
                    if not line:
                        continue
                    message = orjson.loads(line)
                    if message.get("type") == "SYNCED" and message.get("pingInterval"):
                        self.ping_interval = float(message["pingInterval"])
                    yield message
        except httpx.HTTPError as exc:
            raise HubError(0, "Unavailable", f"hub unreachable: {exc!r}") from None
        except orjson.JSONDecodeError as exc:
            raise HubError(0, "BadResponse", f"the hub sent a line that is not JSON: {exc}") from None

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self.requests.post(f"{self.base}/{path}", content=orjson.dumps(body),
                                             headers={**self.headers, "Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise HubError(0, "Unavailable", f"hub unreachable: {exc!r}") from None
        if response.status_code != 200:
            raise _status_error(response, response.content)
        return dict(response.json())

    async def heartbeat(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._post("heartbeat", body)

    async def report(self, objects: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("status", {"objects": objects})

    async def events(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("events", {"events": events})

    async def upsync(self, objects: list[dict[str, Any]], complete: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._post("upsync", {"objects": objects, "complete": complete})
