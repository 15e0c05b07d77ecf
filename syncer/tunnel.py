"""The syncer's pod tunnel: one outbound WebSocket to ``/syncer/v1/targets/<target>/tunnel``, kept open.

Like the sync stream it only dials out (through ``HTTPS_PROXY``, and through reverse proxies that pass
WebSocket upgrades), reconnects with jittered backoff when the hub goes away, restarts or replaces it, and
treats three ping intervals of silence as a dead connection. Over it the hub opens streams, which
:class:`~syncer.relay.ClusterRelay` checks and performs against the cluster (docs/sync-protocol.md, "The
tunnel").
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp

from kubeclient.backoff import Backoff
from kubeclient.session import UNREACHABLE
from kubeclient.tunnel.frames import MAX_FRAME
from kubeclient.tunnel.mux import Session
from syncer.bootstrap import Bootstrap
from syncer.hubclient import DEFAULT_PING_INTERVAL, RECONNECT_MAX_SECONDS
from syncer.relay import ClusterRelay

log = logging.getLogger(__name__)
# A tunnel that lasted this long was a good one: reconnect quickly. One that ends sooner (refused, replaced by
# a second syncer of the same cluster) backs off further each time instead of reconnecting in a loop.
STABLE_SECONDS = 30.0
CONNECT_TIMEOUT = aiohttp.ClientWSTimeout(ws_receive=None, ws_close=5.0)


class AiohttpTransport:
    """A client WebSocket as ``kubeclient.tunnel.mux.Transport`` sees it."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, data: bytes) -> None:
        await self.ws.send_bytes(data)

    async def receive(self) -> bytes | None:
        message = await self.ws.receive()
        if message.type == aiohttp.WSMsgType.BINARY:
            return bytes(message.data)
        return None  # closed, broken, or a text message, which the protocol never sends

    async def close(self, code: int, reason: str) -> None:
        await self.ws.close(code=code, message=reason.encode())


class Tunnel:
    def __init__(self, bootstrap: Bootstrap, http: aiohttp.ClientSession, relay: ClusterRelay) -> None:
        """``http``: a session for the hub (its connections held for as long as the tunnel is open)."""
        self.target = bootstrap.sync_target
        self.hub = bootstrap.hub
        self.url = f"{bootstrap.hub}/syncer/v1/targets/{bootstrap.sync_target}/tunnel"
        self.headers = {"Authorization": f"Bearer {bootstrap.token}"}
        self.http = http
        self.relay = relay
        self.session: Session | None = None  # while connected

    async def run(self) -> None:
        """Keep the tunnel open until cancelled."""
        backoff = Backoff(0.5, RECONNECT_MAX_SECONDS)
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await self._connect_once()
            if loop.time() - started >= STABLE_SECONDS:
                backoff.reset()
            await asyncio.sleep(backoff.next())

    async def _connect_once(self) -> None:
        try:
            async with self.http.ws_connect(self.url, headers=self.headers, autoping=True, max_msg_size=MAX_FRAME,
                                            timeout=CONNECT_TIMEOUT) as ws:
                self.session = Session(AiohttpTransport(ws), ping_interval=DEFAULT_PING_INTERVAL,
                                       on_open=self.relay.handle, name=f"syncer {self.target}'s tunnel")
                log.info("syncer %s: tunnel to %s open", self.target, self.hub)
                why = await self.session.run()
                log.info("syncer %s: tunnel %s", self.target, why)
        except aiohttp.WSServerHandshakeError as exc:
            level = logging.ERROR if exc.status in (401, 403) else logging.WARNING
            log.log(level, "syncer %s: the hub refused the tunnel: %s %s", self.target, exc.status, exc.message)
        except UNREACHABLE as exc:
            log.warning("syncer %s: tunnel to %s failed: hub unreachable: %r", self.target, self.hub, exc)
        finally:
            self.session = None
