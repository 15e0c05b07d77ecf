"""A kube space's API server: its kubeconfig read into clients of it, and the errors of reaching it.

Two clients share the kubeconfig's credentials (one TLS context, one token): the client core
(``kubeclient.client``, aiohttp) for everything the hub asks the server itself — the probe's reads and applies,
the placement mirror's lists, watches and discovery — and an httpx client for the proxy alone
(``spaces.providers.proxy``): it forwards callers' requests with their own headers and passes the server's
answers on as raw bytes (``aiter_raw``: a body the caller asked gzipped stays as its ``Content-Encoding`` says),
where the core's session reads and decodes what it is answered.

Only what a kubeconfig can carry inline is accepted (``server``, ``certificate-authority-data``,
``insecure-skip-tls-verify``, ``token``, ``client-certificate-data``/``client-key-data``): the hub has no files
of the Secret's author to read and runs no exec plugins, so those are refused as ``KubeconfigInvalid`` with
the field named.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

import httpx
import yaml

from kubeclient.client import KubeClient
from kubeclient.kubeconfig import KubeconfigError, current_cluster, current_user
from kubeclient.session import StaticCredentials

CONNECT_TIMEOUT = 5.0
MANAGER = "spacehub-providers"  # the hub's writes to a kube space's server
# The proxy's reads have no deadline: a watch's response is open for as long as the server keeps it.
TIMEOUT = httpx.Timeout(connect=CONNECT_TIMEOUT, read=None, write=30.0, pool=CONNECT_TIMEOUT)
_UNSUPPORTED_USER = ("tokenFile", "client-certificate", "client-key", "exec", "auth-provider", "username")


class ProviderError(Exception):
    """The space's API server cannot be used; ``reason`` is the ProviderReachable condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class Upstream:
    """One kube space's API server: its base URL (a path such as ``/clusters/x`` included), the client core
    for the hub's own requests, and the proxy's httpx client."""

    server: str
    client: KubeClient
    proxy_client: httpx.AsyncClient

    @property
    def base_path(self) -> str:
        return httpx.URL(self.server).path.rstrip("/")

    def url(self, path: str, query: bytes = b"") -> str:
        """The server's URL for ``path`` (relative to the server, no leading slash) and a raw query string."""
        url = f"{self.server.rstrip('/')}/{path.lstrip('/')}"
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def close(self) -> None:
        await self.client.close()
        await self.proxy_client.aclose()


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise ProviderError("KubeconfigInvalid", f"{what} is not valid base64") from None


def _ssl_context(cluster: dict[str, Any], user: dict[str, Any]) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if cluster.get("certificate-authority-data"):
        try:
            ctx.load_verify_locations(cadata=_b64(cluster["certificate-authority-data"],
                                                  "certificate-authority-data").decode())
        except (ssl.SSLError, UnicodeDecodeError) as exc:
            raise ProviderError("KubeconfigInvalid", f"certificate-authority-data: {exc}") from None
    if cluster.get("insecure-skip-tls-verify"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if user.get("client-certificate-data") or user.get("client-key-data"):
        cert = _b64(user.get("client-certificate-data", ""), "client-certificate-data")
        key = _b64(user.get("client-key-data", ""), "client-key-data")
        # ssl loads a key pair from files only; they live just long enough to be read.
        with tempfile.TemporaryDirectory() as tmp:
            cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert_file, cert), (key_file, key)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                    f.write(data)
            try:
                ctx.load_cert_chain(cert_file, key_file)
            except ssl.SSLError as exc:
                raise ProviderError("KubeconfigInvalid", f"client certificate and key: {exc}") from None
    return ctx


def upstream_from_kubeconfig(text: bytes) -> Upstream:
    """The API server of a kubeconfig's current context, with its credentials; ``ProviderError`` if the
    kubeconfig cannot be used."""
    try:
        cfg = yaml.safe_load(text)
        if not isinstance(cfg, dict):
            raise KubeconfigError("not a kubeconfig (a YAML mapping)")
        cluster, user = current_cluster(cfg), current_user(cfg)
    except (yaml.YAMLError, KubeconfigError) as exc:
        raise ProviderError("KubeconfigInvalid", f"the kubeconfig cannot be read: {exc}") from None
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise ProviderError("KubeconfigInvalid", "the kubeconfig's cluster has no https:// or http:// server")
    unsupported = [k for k in _UNSUPPORTED_USER if user.get(k)] + \
        (["certificate-authority"] if cluster.get("certificate-authority") else [])
    if unsupported:
        raise ProviderError("KubeconfigInvalid", f"the kubeconfig uses {', '.join(unsupported)}, which the hub "
                                                 "cannot use: give credentials inline (token, "
                                                 "client-certificate-data and client-key-data, "
                                                 "certificate-authority-data)")
    token = str(user["token"]) if user.get("token") else None
    tls = _ssl_context(cluster, user)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    proxy_client = httpx.AsyncClient(verify=tls, headers=headers, timeout=TIMEOUT, follow_redirects=False)
    client = KubeClient(StaticCredentials(server, token, tls), server, MANAGER)
    return Upstream(server=server, client=client, proxy_client=proxy_client)


def unreachable(exc: Exception) -> str:
    """A transport error, worded for a condition's message and a 503 (some have no text of their own)."""
    return str(exc) or type(exc).__name__
