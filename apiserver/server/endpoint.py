"""Where a space server listens and how clients reach it: listen address, TLS, base URL, uvicorn settings.

Shared by ``spacehub hub serve`` and ``spacehub sim serve``: both serve HTTPS with a CA generated in
their data dir (``apiserver.server.tls``), or plain HTTP for local experiments, and both hand clients a URL
they can dial (a wildcard listen address is not dialable).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from apiserver.server import wsmask
from apiserver.server.certfiles import CertificateFiles, follow
from apiserver.server.coalesce import CoalescingHttpToolsProtocol
from apiserver.server.tls import ensure_pki

GRACEFUL_SHUTDOWN_SECONDS = 3
# How long an idle keep-alive connection stays open. uvicorn's default (5 s) is shorter than a syncer's
# heartbeat interval (15 s), so every heartbeat paid a new TCP and TLS handshake (at 1,000 clusters, 67
# handshakes a second on each side). Longer than the syncer's own idle expiry (120 s) so that the client,
# not the server, closes an idle connection and never sends a request down one being closed; Go clients
# (kubectl, client-go) keep idle connections 90 s.
IDLE_CONNECTION_SECONDS = 130


@dataclass(frozen=True)
class Endpoint:
    host: str  # what the socket binds
    port: int
    base_url: str  # what clients dial, without a path: https://127.0.0.1:6443
    ca_pem: bytes | None  # the CA clients must trust (None over plain HTTP)
    ssl: dict[str, str] = field(default_factory=dict)  # uvicorn's ssl_certfile/ssl_keyfile
    followed: CertificateFiles | None = None  # the operator's certificate files, reloaded when they change

    def uvicorn_config(self, app: Any) -> uvicorn.Config:
        # log_config=None: uvicorn's loggers go through the process's own handler (kubeclient.logs). ws: kubectl
        # port-forward asks for the WebSocket subprotocol "SPDY/3.1+portforward.k8s.io", which the websockets
        # library refuses ("/" is no token character); wsproto takes it, as the Go servers kubectl talks to do,
        # and unmasks in C (apiserver.server.wsmask). http: a response's head and body in one write.
        wsmask.install()
        return uvicorn.Config(app, host=self.host, port=self.port, log_level="warning", log_config=None,
                              lifespan="on", ws="wsproto", http=CoalescingHttpToolsProtocol,
                              timeout_keep_alive=IDLE_CONNECTION_SECONDS,
                              timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                              **self.ssl)  # type: ignore[arg-type]

    def server(self, app: Any, on_shutdown: Callable[[], None] | None = None) -> uvicorn.Server:
        return SpaceServer(self.uvicorn_config(app), self.followed, on_shutdown)


class SpaceServer(uvicorn.Server):
    """uvicorn's server, loading the operator's certificate files into its TLS context when they change, and
    telling the application first when it stops (``on_shutdown``: end watches and streams, which would
    otherwise hold their connections open through the whole grace period)."""

    def __init__(self, config: uvicorn.Config, followed: CertificateFiles | None = None,
                 on_shutdown: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self._followed = followed
        self._on_shutdown = on_shutdown
        self._following: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # uvicorn re-raises the SIGTERM it handled once stopped, so the process dies of it (exit 143); a
            # server that stopped cleanly on request exits 0 instead.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self._followed is not None and isinstance(self.config.ssl, ssl.SSLContext):
            self._following = asyncio.create_task(follow(self._followed, self.config.ssl))

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        if self._on_shutdown is not None:
            self._on_shutdown()
        if self._following is not None:
            self._following.cancel()
        await super().shutdown(sockets=sockets)


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        return host, int(port)
    except ValueError:
        raise SystemExit(f"error: --listen must be HOST:PORT, got {listen!r}") from None


def client_host(host: str) -> str:
    """The address clients should dial for a listen address (wildcards are not dialable)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def advertised(url: str, scheme: str) -> tuple[str, str]:
    """``--advertise-url`` checked: the base URL clients are given, and its host (for the certificate)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != scheme or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SystemExit(f"error: --advertise-url must be {scheme}://HOST[:PORT] (what clients dial, without a "
                         f"path), got {url!r}")
    return f"{parts.scheme}://{parts.netloc}", parts.hostname


def prepare_endpoint(data_dir: Path, listen: str, insecure_http: bool, *, advertise_url: str | None = None,
                     tls_sans: Sequence[str] = (), certificate: CertificateFiles | None = None) -> Endpoint:
    """The endpoint for ``--listen``: HTTPS with the data dir's CA (created on first use) unless plain HTTP or the
    operator's own certificate; clients are given ``advertise_url`` when set (a load balancer, a DNS name),
    else the listen address."""
    host, port = split_listen(listen)
    dial = client_host(host)
    dial_hostport = f"[{dial}]:{port}" if ":" in dial else f"{dial}:{port}"
    scheme = "http" if insecure_http else "https"
    base_url, names = f"{scheme}://{dial_hostport}", list(tls_sans)
    if advertise_url:
        base_url, advertised_host = advertised(advertise_url, scheme)
        names.append(advertised_host)
    if insecure_http:
        return Endpoint(host, port, base_url, None)
    if certificate is not None:
        try:
            certificate.check()
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        return Endpoint(host, port, base_url, certificate.ca_pem(),
                        {"ssl_certfile": str(certificate.cert), "ssl_keyfile": str(certificate.key)}, certificate)
    pki = ensure_pki(data_dir, sorted({dial, "localhost", "127.0.0.1", "::1", host, *names} - {"0.0.0.0", "::"}))
    return Endpoint(host, port, base_url, pki.ca_cert_pem,
                    {"ssl_certfile": str(pki.cert_file), "ssl_keyfile": str(pki.key_file)})
