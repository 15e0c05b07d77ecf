"""A small synchronous client for the hub's Kubernetes-style API, and the Space calls built on it.

Owns turning a kubeconfig into HTTP requests (trust, bearer token, ``HTTPS_PROXY``/``NO_PROXY``) over the
client core's session (``kubeclient.session``, run on the client's own event loop: the CLIs that use it are
synchronous) and turning failures into two exceptions the CLIs print without a traceback: :class:`HubError` for
a ``Status`` from the server, :class:`ConnectionFailed` when the server could not be reached at all.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.parse
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from apiserver import spacepaths
from kubeclient import kubeconfig
from kubeclient.kubeconfig import ClusterAccess
from kubeclient.output import UserError
from kubeclient.session import UNREACHABLE, ClusterHTTP, StaticCredentials

SPACE_GROUP = "spacehub.io"
SPACE_VERSION = "v1alpha1"
SPACE_RESOURCE = "spaces"
SPACE_KIND = "Space"
ROOT_SPACE = spacepaths.ROOT


class ClientError(UserError):
    """A failure the CLIs report as one line, without a traceback."""


class HubError(ClientError):
    """The server answered with an error (a Kubernetes ``Status`` when it could)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def render(self) -> str:
        # kubectl's wording, so that scripts and people read both tools the same way.
        return f"Error from server ({self.reason}): {self.message}"


class ConnectionFailed(ClientError):
    """The server could not be reached, or its TLS certificate was not trusted."""


class HubClient:
    """JSON requests against paths relative to the hub base URL (``/clusters/<space>/…``)."""

    def __init__(self, base_url: str, *, ca_pem: bytes | None = None, token: str | None = None,
                 insecure_skip_tls_verify: bool = False, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._http = ClusterHTTP(StaticCredentials(self.base_url, token, _verify(ca_pem, insecure_skip_tls_verify)))
        self._loop = asyncio.new_event_loop()

    @classmethod
    def from_access(cls, acc: ClusterAccess, *, timeout: float = 30.0) -> HubClient:
        base, _ = kubeconfig.split_server(acc.server)
        return cls(base, ca_pem=acc.ca_pem, token=acc.token,
                   insecure_skip_tls_verify=acc.insecure_skip_tls_verify, timeout=timeout)

    @classmethod
    def from_kubeconfig(cls, cfg: dict[str, Any], base_dir: Path | None = None, *,
                        timeout: float = 30.0) -> HubClient:
        """A client for the hub behind the current context, whichever space that context is in."""
        return cls.from_access(kubeconfig.access(cfg, base_dir), timeout=timeout)

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._loop.run_until_complete(self._http.close())
        self._loop.close()

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", path, body=body)

    def delete(self, path: str) -> dict[str, Any]:
        return self._request("DELETE", path)

    def _request(self, method: str, path: str, *, params: dict[str, str] | None = None,
                 body: dict[str, Any] | None = None) -> dict[str, Any]:
        code, phrase, content = self._loop.run_until_complete(self._send(method, path, params, body))
        if code >= 400:
            raise _status_error(code, phrase, content)
        if not content:
            return {}
        try:
            data = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise HubError(code, "InternalError", f"the server {self.base_url} sent a response that is not JSON"
                           ) from None
        if not isinstance(data, dict):
            raise HubError(code, "InternalError", f"the server {self.base_url} sent JSON that is not an object")
        return data

    async def _send(self, method: str, path: str, params: dict[str, str] | None,
                    body: dict[str, Any] | None) -> tuple[int, str, bytes]:
        """The answer's status, reason phrase and body; ``ConnectionFailed`` when there is none."""
        headers = [("Accept", "application/json"), ("User-Agent", "spacehub-cli")]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        url = self._http.url(path, urllib.parse.urlencode(params) if params else "")
        try:
            response = await self._http.request(method, url, headers, orjson.dumps(body) if body is not None else None,
                                                self._timeout)
            try:
                return response.status, response.reason or "", await response.read()
            finally:
                response.release()
        except aiohttp.ClientConnectorError as exc:
            raise ConnectionFailed(_connect_message(self.base_url, exc)) from None
        except TimeoutError:
            raise ConnectionFailed(f"the server {self.base_url} did not answer in time") from None
        except UNREACHABLE as exc:
            raise ConnectionFailed(f"request to {self.base_url} failed: {exc}") from None


def client_for(explicit_kubeconfig: str | None) -> HubClient:
    """A client for the hub of the kubeconfig a command selected (see ``kubeconfig.load_selected``)."""
    path, cfg = kubeconfig.load_selected(explicit_kubeconfig)
    return HubClient.from_kubeconfig(cfg, path.parent)


def _verify(ca_pem: bytes | None, insecure: bool) -> ssl.SSLContext:
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if ca_pem:
        try:
            return ssl.create_default_context(cadata=ca_pem.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError):
            raise ConnectionFailed("the kubeconfig's certificate authority is not a valid PEM certificate"
                                   ) from None
    return ssl.create_default_context()  # the system's CAs


def _connect_message(base_url: str, exc: aiohttp.ClientConnectorError) -> str:
    text = str(exc)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError) or "CERTIFICATE_VERIFY_FAILED" in text:
        return (f"cannot verify the TLS certificate of {base_url}: {text} "
                "(is certificate-authority-data the hub's pki/ca.crt?)")
    if isinstance(exc.os_error, ConnectionRefusedError):
        return f"the connection to the server {base_url} was refused - is the hub running?"
    return f"cannot connect to the server {base_url}: {text}"


def _status_error(code: int, phrase: str, content: bytes) -> HubError:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return HubError(int(body.get("code") or code), str(body.get("reason") or _reason(code, phrase)),
                        str(body.get("message") or phrase))
    # Not a Status: a proxy or something else answered; say what came back, briefly.
    text = content.decode(errors="replace").strip()
    return HubError(code, _reason(code, phrase), text.splitlines()[0][:200] if text else phrase)


def _reason(code: int, phrase: str) -> str:
    # The reasons apimachinery gives a bare HTTP status (errors.go NewGenericServerResponse).
    known = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
             405: "MethodNotAllowed", 409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType",
             422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
             504: "Timeout"}
    return known.get(code, phrase.replace(" ", "") or "Unknown")


# --- Spaces (``spacehub.io/v1alpha1 Space`` objects, each in its parent space) --------------------
# Every ``path`` below is a full space path (``root:org:team``, ``apiserver.spacepaths``): the Space object of
# ``root:org:team`` is ``team`` in the space ``root:org``.

def spaces_path(parent: str) -> str:
    """Where the Spaces inside the space ``parent`` are listed and created."""
    return f"/clusters/{quote(parent, safe=':')}/apis/{SPACE_GROUP}/{SPACE_VERSION}/{SPACE_RESOURCE}"


def _parent_and_name(path: str) -> tuple[str, str]:
    """The full path of the space holding ``path``'s Space object, and that object's name."""
    parent = spacepaths.parent_id(spacepaths.store_id(path))
    if parent is None:
        raise ClientError(f'the hub itself holds the "{ROOT_SPACE}" space: it has no Space object')
    return spacepaths.full_path(parent), spacepaths.base_name(path)


def _object_path(path: str) -> str:
    parent, name = _parent_and_name(path)
    return f"{spaces_path(parent)}/{quote(name, safe='')}"


def list_spaces(client: HubClient, parent: str = ROOT_SPACE) -> dict[str, Any]:
    """The ``SpaceList`` of the space ``parent``'s children, as the server returns it."""
    return client.get(spaces_path(parent))


def get_space(client: HubClient, path: str) -> dict[str, Any]:
    return client.get(_object_path(path))


def find_space(client: HubClient, path: str) -> dict[str, Any] | None:
    """The Space, or None when it (or a space above it) does not exist."""
    try:
        return get_space(client, path)
    except HubError as exc:
        if exc.code == 404:
            return None
        raise


def create_space(client: HubClient, path: str) -> dict[str, Any]:
    parent, name = _parent_and_name(path)
    body = {"apiVersion": f"{SPACE_GROUP}/{SPACE_VERSION}", "kind": SPACE_KIND, "metadata": {"name": name}}
    return client.post(spaces_path(parent), body)


def delete_space(client: HubClient, path: str) -> dict[str, Any]:
    return client.delete(_object_path(path))


def space_phase(space: dict[str, Any]) -> str:
    return str((space.get("status") or {}).get("phase") or "")


def wait_space_deleted(client: HubClient, name: str, timeout: float, interval: float = 0.5) -> bool:
    """Poll until the Space is gone; False if it still exists when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        if find_space(client, name) is None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def wait_space_ready(client: HubClient, name: str, timeout: float,
                     interval: float = 0.25) -> dict[str, Any] | None:
    """Poll until the Space reports phase Ready; None if it has not when the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        space = find_space(client, name)
        if space is not None and space_phase(space) == "Ready":
            return space
        if time.monotonic() >= deadline:
            return None
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
