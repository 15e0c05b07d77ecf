"""One HTTP connection pool to a workload cluster's API server, shared by the syncer's API calls
(``syncer.cluster``) and the pod tunnel's relay (``syncer.relay``).

The credentials are kr8s's (kubeconfig token, client certificate or exec plugin, or the in-cluster service
account): kr8s reads them and re-reads them when the cluster answers 401. The HTTP is aiohttp's rather than
kr8s's httpx client: it speaks WebSocket and pauses reading a response whose consumer is behind, which the
relay needs, and a server-side apply through it costs a third of the client CPU (``bench/sync_bench.py``:
with a thousand syncers in a simulator, the client side of their applies was a third of its CPU).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import aiohttp
from yarl import URL

from syncer.hubclient import proxy_for

# No overall limit by default: a followed log or a watch lasts as long as its reader wants it; callers give
# their own per request.
SESSION_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0)


class ClusterHTTP:
    """The cluster's server, credentials and one keep-alive session to it, opened on first use."""

    def __init__(self, auth: Any) -> None:
        """``auth``: kr8s's ``KubeAuth`` for the cluster (``kr8s.asyncio.api(...).auth``)."""
        self.auth = auth
        self._session: aiohttp.ClientSession | None = None
        self._opening = asyncio.Lock()  # the first requests come at once: one session for all of them

    @property
    def server(self) -> str:
        return str(self.auth.server).rstrip("/")

    def url(self, path: str, query: str = "", server: str | None = None) -> URL:
        """``path`` (already %-encoded, starting with ``/``) under the server, which may carry a path of its own
        (a hub space: ``https://hub/clusters/team``), or under ``server`` (another path of the same host)."""
        return URL((server or self.server) + path + (f"?{query}" if query else ""), encoded=True)

    async def session(self) -> aiohttp.ClientSession:
        if self._session is not None:
            return self._session
        async with self._opening:
            if self._session is None:
                context = await self.auth.ssl_context()  # True: the system's CAs
                connector = aiohttp.TCPConnector(ssl=context if isinstance(context, ssl.SSLContext) else True)
                # No Accept-Encoding: bodies come uncompressed, so what the relay passes on is what its client reads.
                self._session = aiohttp.ClientSession(connector=connector, timeout=SESSION_TIMEOUT,
                                                      skip_auto_headers=("Accept-Encoding",),
                                                      proxy=self.auth.proxy or proxy_for(self.server))
            return self._session

    def options(self, headers: list[tuple[str, str]]) -> dict[str, Any]:
        """aiohttp request arguments: ``headers`` plus the credentials, and the TLS name when the kubeconfig
        sets one."""
        sent = list(headers)
        if self.auth.token:
            sent.append(("Authorization", f"Bearer {self.auth.token}"))
        options: dict[str, Any] = {"headers": sent}
        if self.auth.tls_server_name:
            options["server_hostname"] = self.auth.tls_server_name
        return options

    async def request(self, method: str, url: URL, headers: list[tuple[str, str]], body: bytes | None,
                      timeout: aiohttp.ClientTimeout | None = None) -> aiohttp.ClientResponse:
        """Send; on 401, read the credentials again and send once more. The caller releases the response."""
        for attempt in (1, 2):
            session = await self.session()
            extra = {"timeout": timeout} if timeout is not None else {}
            response = await session.request(method, url, data=body or None, **self.options(headers), **extra)
            if response.status != 401 or attempt == 2:
                return response
            response.release()
            await self.reauthenticate()
        raise AssertionError("unreachable")

    async def ws_connect(self, url: URL, headers: list[tuple[str, str]], protocols: list[str],
                         max_msg_size: int) -> aiohttp.ClientWebSocketResponse:
        for attempt in (1, 2):
            session = await self.session()
            try:
                return await session.ws_connect(url, protocols=protocols, max_msg_size=max_msg_size, autoping=True,
                                                **self.options(headers))
            except aiohttp.WSServerHandshakeError as exc:
                if exc.status != 401 or attempt == 2:
                    raise
            await self.reauthenticate()
        raise AssertionError("unreachable")

    async def reauthenticate(self) -> None:
        """The cluster said 401: a rotated or expired token (re-read; the next request carries it, and the
        session stays, other streams are reading through its connections), or a rotated client certificate
        (only a new session presents the new one)."""
        await self.auth.reauthenticate()
        if self.auth.client_cert_file and self._session is not None:
            old, self._session = self._session, None
            await old.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
