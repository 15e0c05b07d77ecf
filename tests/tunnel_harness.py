"""In-process pieces for the pod tunnel's tests, all on real sockets.

* :func:`hub_in_process` serves the real hub app on uvicorn (HTTPS, its own data dir) in the test's event
  loop, so that a test can call the hub-side API (``core.syncers.tunnels``) that only the hub process holds.
* :class:`ExecCluster` is an HTTPS server requiring a client certificate, with WebSocket ``pods/exec``
  endpoints that echo, flood, send one large message and close with a chosen code on request: what the
  simulator's exec does not do, to test the relay's flow control and close codes, and a client-certificate
  kubeconfig.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from aiohttp import WSMsgType, web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apiserver.server.endpoint import prepare_endpoint
from apiserver.server.tls import CA_CERT, CA_KEY, ensure_pki
from hub.app import HubCore, HubSettings, build_app
from kubeclient.kubeconfig import ensure_admin
from syncer.bootstrap import Bootstrap
from tests.harness import free_port
from tests.polling import eventually

T = TypeVar("T")
SUBPROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
FLOOD_BYTES = 8 * 1024 * 1024
FLOOD_MESSAGE = 32 * 1024
BIG_MESSAGE = 1024 * 1024


@dataclass
class HubInProcess:
    core: HubCore
    base_url: str

    async def register(self, name: str) -> Bootstrap:
        result = await self.core.registration.register(name, {})
        return Bootstrap.from_dict(result["bootstrap"], f"the bootstrap of {name}")


@contextlib.asynccontextmanager
async def hub_in_process(data_dir: Path, ping_interval: float = 15.0) -> AsyncIterator[HubInProcess]:
    data_dir.mkdir(parents=True, exist_ok=True)
    endpoint = prepare_endpoint(data_dir, f"127.0.0.1:{free_port()}", False)
    admin = ensure_admin(data_dir, f"{endpoint.base_url}/clusters/root", endpoint.ca_pem)
    app, core = build_app(HubSettings(db_url=f"sqlite:///{data_dir / 'spacehub.db'}", admin_token=admin.token,
                                      public_url=endpoint.base_url, ca_pem=endpoint.ca_pem,
                                      sync_ping_interval=ping_interval))
    server = endpoint.server(app, on_shutdown=core.drain)
    serving = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or serving.done(), timeout=60, message="the hub to start")
        if serving.done():
            serving.result()
        yield HubInProcess(core, endpoint.base_url)
    finally:
        server.should_exit = True
        await serving


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate,
                 issuer_key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(issuer_key, hashes.SHA256()))


@dataclass
class ExecCluster:
    """WebSocket ``/clusters/c1/api/v1/namespaces/<ns>/pods/p/exec`` (other pods: 404) behind client-certificate
    TLS. Each message is echoed with its type, except ``flood`` (answered with ``FLOOD_BYTES`` in
    ``FLOOD_MESSAGE``-byte messages as fast as the connection takes them), ``big`` (one ``BIG_MESSAGE``-byte
    message) and ``close:<code>`` (the server closes with that code)."""

    workdir: Path
    port: int = field(default_factory=free_port)
    flooded: int = 0  # bytes of the flood written so far
    clients: list[str] = field(default_factory=list)  # the client certificates' subjects, per upgrade
    closed_with: list[int | None] = field(default_factory=list)  # the close code each client closed with
    _runner: web.AppRunner | None = None

    async def start(self) -> None:
        pki = ensure_pki(self.workdir, ["127.0.0.1"])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_file))
        context.load_cert_chain(pki.cert_file, pki.key_file)
        context.verify_mode = ssl.CERT_REQUIRED
        app = web.Application()
        app.router.add_get("/clusters/c1/version/", self._version)  # as kr8s asks for it
        app.router.add_get("/clusters/c1/api/v1/namespaces/{ns}/pods/{name}/exec", self._exec)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=context).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig with a client certificate (no token) signed by the server's CA."""
        pki_dir = self.workdir / "pki"
        ca = x509.load_pem_x509_certificate((pki_dir / CA_CERT).read_bytes())
        ca_key = serialization.load_pem_private_key((pki_dir / CA_KEY).read_bytes(), None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate("syncer-of-c1", key, ca, ca_key)

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        cluster = {"server": f"https://127.0.0.1:{self.port}/clusters/c1",
                   "certificate-authority-data": b64((pki_dir / CA_CERT).read_bytes())}
        user = {"client-certificate-data": b64(cert.public_bytes(serialization.Encoding.PEM)),
                "client-key-data": b64(key_pem)}
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c1",
            "clusters": [{"name": "c1", "cluster": cluster}], "users": [{"name": "c1", "user": user}],
            "contexts": [{"name": "c1", "context": {"cluster": "c1", "user": "c1"}}]}))
        return path

    async def _version(self, _request: web.Request) -> web.Response:
        return web.json_response({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["name"] != "p":
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                      "reason": "NotFound", "message": 'pods "x" not found'}, status=404)
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        self.clients.append(str(dict(x[0] for x in peer["subject"]).get("commonName")) if peer else "")
        ws = web.WebSocketResponse(protocols=SUBPROTOCOLS, max_msg_size=0)
        await ws.prepare(request)
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                await ws.send_str(message.data)
            elif message.type != WSMsgType.BINARY:
                break
            elif message.data == b"flood":
                while self.flooded < FLOOD_BYTES:
                    await ws.send_bytes(b"\x01" + b"x" * (FLOOD_MESSAGE - 1))
                    self.flooded += FLOOD_MESSAGE
            elif message.data == b"big":
                await ws.send_bytes(bytes(range(256)) * (BIG_MESSAGE // 256))
            elif message.data.startswith(b"close:"):
                await ws.close(code=int(message.data[6:]), message=b"asked to")
            else:
                await ws.send_bytes(message.data)
        self.closed_with.append(ws.close_code)
        return ws
