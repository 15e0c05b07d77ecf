"""One HTTP connection pool to a Kubernetes API server and the credentials it presents: the session every
client of a cluster's API shares (``kubeclient.client``, and the syncer's pod-tunnel relay).

The credentials come from a :class:`Credentials`: kr8s's (:func:`kr8s_credentials`: kubeconfig token, client
certificate or exec plugin, or the in-cluster service account), re-read when the server answers 401; or a
kubeconfig already read into memory (:class:`StaticCredentials`, a kube space's Secret). The HTTP is aiohttp's
rather than kr8s's httpx client: it speaks WebSocket and pauses reading a response whose consumer is behind,
which the relay needs, and a server-side apply through it costs a third of the client CPU
(``bench/sync_bench.py``: with a thousand syncers in a simulator, the client side of their applies was a third
of its CPU).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
from yarl import URL

from kubeclient.proxyenv import proxy_for

# What aiohttp raises when a server cannot be reached, or a connection to it is cut or times out.
UNREACHABLE = (aiohttp.ClientError, TimeoutError, OSError)

# No overall limit by default: a followed log or a watch lasts as long as its reader wants it; callers give
# their own per request.
SESSION_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0)


class Credentials(Protocol):
    """What a session needs to reach a server: kr8s's ``KubeAuth`` has these, :class:`StaticCredentials` too."""

    server: str
    token: str | None
    tls_server_name: str | None
    client_cert_file: Any

    @property
    def proxy(self) -> str | None: ...

    async def ssl_context(self) -> ssl.SSLContext | bool: ...

    async def reauthenticate(self) -> None: ...


async def kr8s_credentials(kubeconfig: str | None, context: str | None = None) -> Credentials:
    """kr8s reads the kubeconfig (``None``: $KUBECONFIG, else the in-cluster service account). Through its public
    ``Api`` class and the ``auth`` it carries, built without kr8s's client cache and awaited as ``auth`` only: kr8s
    then opens no HTTP client of its own (its version check would), so there is nothing of kr8s's to close."""
    import kr8s.asyncio  # here: only syncers read a kubeconfig so, and its 0.4 s import would slow the hub's start

    api = kr8s.asyncio.Api(kubeconfig=kubeconfig, context=context, bypass_factory=True)
    await api.auth
    return api.auth


@dataclass
class StaticCredentials:
    """Credentials read once, from a kubeconfig held in memory (a kube space's Secret): when they change, their
    owner builds a new session. The TLS context carries the CA and any client certificate."""

    server: str
    token: str | None
    tls: ssl.SSLContext
    tls_server_name: str | None = None
    client_cert_file: Any = None
    proxy: str | None = None

    async def ssl_context(self) -> ssl.SSLContext:
        return self.tls

    async def reauthenticate(self) -> None:
        """Nothing to read again: a 401 stays one (``ClusterHTTP`` does not send the request again)."""


class ClusterHTTP:
    """The cluster's server, credentials and one keep-alive session to it, opened on first use."""

    def __init__(self, auth: Credentials) -> None:
        self.auth = auth
        # How many times a request is sent while the server answers 401: twice when the credentials can be read
        # again (kr8s's), once when reading them again changes nothing.
        self._attempts = (1,) if isinstance(auth, StaticCredentials) else (1, 2)
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
        for attempt in self._attempts:
            session = await self.session()
            extra = {"timeout": timeout} if timeout is not None else {}
            response = await session.request(method, url, data=body or None, **self.options(headers), **extra)
            if response.status != 401 or attempt == self._attempts[-1]:
                return response
            response.release()
            await self.reauthenticate()
        raise AssertionError("unreachable")

    async def ws_connect(self, url: URL, headers: list[tuple[str, str]], protocols: list[str],
                         max_msg_size: int) -> aiohttp.ClientWebSocketResponse:
        for attempt in self._attempts:
            session = await self.session()
            try:
                return await session.ws_connect(url, protocols=protocols, max_msg_size=max_msg_size, autoping=True,
                                                **self.options(headers))
            except aiohttp.WSServerHandshakeError as exc:
                if exc.status != 401 or attempt == self._attempts[-1]:
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
