"""The client core: one Kubernetes API server's API over its session (``kubeclient.session``), for every
spacehub process that talks to one — the syncer (its cluster), the hub's kube-space mirror and probe (a kube
space's server).

Owns URLs, server-side apply, merge patches, creates, deletes, reads, paged lists and watches (with bookmarks)
of resources named by (group, version, resource), and discovery. Errors become :class:`ClusterError` with the
server's ``Status`` reason, or ``Unavailable`` when the server could not be reached; ``reach`` records which
(any HTTP answer is an answer). The list-then-watch loop over it is ``kubeclient.reflector``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import aiohttp
import orjson

from kubeclient.session import UNREACHABLE, ClusterHTTP, Credentials

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30.0)
PROBE_TIMEOUT = aiohttp.ClientTimeout(total=5.0)
# A watch ends server-side after this long (kubectl's reflectors do the same) and is re-opened from
# its last resourceVersion: a connection silently dropped by something in between is noticed.
WATCH_SECONDS = 300
PAGE = 500  # objects per list page
JSON = [("Accept", "application/json")]


@dataclass(frozen=True)
class GVR:
    group: str
    version: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.version}.{self.group}" if self.group else f"{self.resource}.{self.version}"


class ClusterError(Exception):
    """An API server's error answer (its ``Status``: code, reason, message), or code 0, ``Unavailable``, when the
    server could not be reached."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def gone(self) -> bool:
        return self.code == 410


def _unreachable(exc: BaseException) -> ClusterError:
    return ClusterError(0, "Unavailable", f"cluster unreachable: {exc!r}")


def _answer_error(code: int, body: bytes) -> ClusterError:
    """An error answer: the ``Status`` it carries, or the HTTP reason phrase where it is not one (a proxy's page)."""
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = None
    if not isinstance(status, dict):
        status = {}
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = "Unknown"
    message = str(status.get("message") or f"{code} {phrase}: {body[:200].decode(errors='replace')}")
    return ClusterError(code, str(status.get("reason") or phrase.replace(" ", "")), message)


def _path(gvr: GVR, namespace: str, rest: str) -> str:
    """``/api/v1[/namespaces/NS]/REST`` or ``/apis/GROUP/VERSION[…]``; names and namespaces are DNS labels and
    resources lowercase words, so nothing needs %-encoding."""
    base = f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"
    return f"{base}/namespaces/{namespace}/{rest}" if namespace else f"{base}/{rest}"


class Reachability:
    """Whether the cluster's API server answered the syncer's latest request: any HTTP answer, an error status
    included, is an answer; a connection refused, cut or timed out is not. Heartbeats carry it to the hub
    (``syncer.reporting``), so a cluster its syncer cannot reach is not Ready there even while the syncer is."""

    def __init__(self) -> None:
        self.reachable: bool | None = None  # None: nothing asked yet
        self.message = ""
        self.answered_at = 0.0  # event-loop time of the latest answer
        # Watches whose response is being read: while one is open, its connection stands for the cluster (a
        # server going away cuts it), and no probe is needed.
        self.watching = 0
        self.listeners: list[Callable[[], None]] = []  # told when ``reachable`` changes

    def answered(self) -> None:
        self.answered_at = asyncio.get_running_loop().time()
        self._set(True, "")

    def failed(self, error: ClusterError) -> None:
        if error.code:
            self.answered()
        else:
            self._set(False, error.message)

    def _set(self, reachable: bool, message: str) -> None:
        changed = reachable != self.reachable
        self.reachable, self.message = reachable, message
        if changed:
            for listener in self.listeners:
                listener()


class KubeClient:
    """One API server's client: its session (``kubeclient.session``) and what is asked of it. Cheap: many share
    one process."""

    def __init__(self, credentials: Credentials, name: str, field_manager: str) -> None:
        self.name = name
        self.field_manager = field_manager  # of every write
        self.http = ClusterHTTP(credentials)
        self.reach = Reachability()

    @contextlib.asynccontextmanager
    async def _request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                       body: bytes | None = None, content_type: str = "",
                       timeout: aiohttp.ClientTimeout = REQUEST_TIMEOUT,
                       server: str | None = None) -> AsyncIterator[aiohttp.ClientResponse]:
        """One request to the cluster, its answer yielded while it is read: an error answer raises ClusterError
        with the ``Status`` it carries, no answer raises it as ``Unavailable``; ``reach`` notes which. ``server``:
        another base than the cluster's server (a hub's placement API beside its space)."""
        headers = [*JSON, ("Content-Type", content_type)] if content_type else JSON
        query = urllib.parse.urlencode(params) if params else ""
        url = self.http.url(path, query, server)
        try:
            response = await self.http.request(method, url, headers, body, timeout)
        except UNREACHABLE as exc:
            error = _unreachable(exc)
            self.reach.failed(error)
            raise error from None
        self.reach.answered()
        try:
            if response.status >= 400:
                try:
                    content = await response.read()
                except UNREACHABLE:
                    content = b""
                raise _answer_error(response.status, content)
            yield response
        finally:
            response.release()

    async def request_json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        async with self._request(method, path, **kwargs) as response:
            try:
                content = await response.read()
            except UNREACHABLE as exc:
                error = _unreachable(exc)
                self.reach.failed(error)
                raise error from None
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise ClusterError(response.status, "BadResponse", "the cluster answered with something not JSON: "
                               f"{content[:200].decode(errors='replace')}") from None
        return answer if isinstance(answer, dict) else {}

    async def probe(self) -> None:
        """Ask the cluster for its version, only to learn whether it answers (``reach``); never raises."""
        with contextlib.suppress(ClusterError):
            async with self._request("GET", "/version", timeout=PROBE_TIMEOUT):
                return

    async def apply(self, gvr: GVR, namespace: str, name: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply as ``field_manager``, forcing: the caller is the authority for what it sends."""
        return await self.request_json("PATCH", _path(gvr, namespace, f"{gvr.resource}/{name}"), body=orjson.dumps(obj),
                                       content_type="application/apply-patch+yaml",
                                       params={"fieldManager": self.field_manager, "force": "true"})

    async def merge_patch(self, gvr: GVR, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self.request_json("PATCH", _path(gvr, namespace, f"{gvr.resource}/{name}"),
                                       body=orjson.dumps(patch), content_type="application/merge-patch+json",
                                       params={"fieldManager": self.field_manager})

    async def create(self, gvr: GVR, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.request_json("POST", _path(gvr, namespace, gvr.resource), body=orjson.dumps(obj),
                                       content_type="application/json", params={"fieldManager": self.field_manager})

    async def get(self, gvr: GVR, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.request_json("GET", _path(gvr, namespace, f"{gvr.resource}/{name}"))
        except ClusterError as exc:
            if exc.not_found:
                return None
            raise

    async def delete(self, gvr: GVR, namespace: str, name: str) -> None:
        """Delete in the background (dependents by the cluster's GC); an absent object is fine."""
        body = orjson.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        try:
            async with self._request("DELETE", _path(gvr, namespace, f"{gvr.resource}/{name}"), body=body,
                                     content_type="application/json"):
                return
        except ClusterError as exc:
            if not exc.not_found:
                raise

    async def list(self, gvr: GVR, label_selector: str, *, namespace: str = "",
                   field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        """All objects of the type (every namespace, or one) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"labelSelector": label_selector, "limit": PAGE}
        if field_selector:
            params["fieldSelector"] = field_selector
        while True:
            page = await self.request_json("GET", _path(gvr, namespace, gvr.resource), params=params)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion") or "")
            params["continue"] = meta["continue"]

    async def watch(self, gvr: GVR, label_selector: str, resource_version: str, *, namespace: str = "",
                    field_selector: str = "", seconds: int = WATCH_SECONDS) -> AsyncIterator[dict[str, Any]]:
        """Watch events after ``resource_version``, bookmarks included, until the server ends the watch after
        ``seconds`` (an ERROR event raises its Status: 410 Gone when the version is too old)."""
        params = {"watch": "true", "labelSelector": label_selector, "resourceVersion": resource_version,
                  "allowWatchBookmarks": "true", "timeoutSeconds": str(seconds)}
        if field_selector:
            params["fieldSelector"] = field_selector
        # With no byte for ``seconds`` and a margin, the server is taken for gone (a partition sends no FIN).
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=seconds + 30.0)
        async with self._request("GET", _path(gvr, namespace, gvr.resource), params=params,
                                 timeout=timeout) as response:
            self.reach.watching += 1
            try:
                async for line in _lines(response):
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise ClusterError(int(obj.get("code") or 500), str(obj.get("reason") or "Unknown"),
                                           str(obj.get("message") or "watch error"))
                    yield event
            except UNREACHABLE as exc:
                raise _unreachable(exc) from None
            finally:
                self.reach.watching -= 1

    async def served_version(self, group: str, resource: str) -> str | None:
        """The version the cluster prefers for ``group``'s ``resource`` (discovery), or None when not served."""
        if not group:
            versions = ["v1"]
        else:
            answer = await self._discovery("/apis", group)
            if answer is None:
                return None
            preferred = str((answer.get("preferredVersion") or {}).get("version") or "")
            versions = [preferred] + [str(v.get("version")) for v in answer.get("versions") or []
                                      if v.get("version") != preferred]
        for version in versions:
            listing = await self._discovery("/apis", f"{group}/{version}") if group else \
                await self._discovery("/api", "v1")
            if listing and any(r.get("name") == resource for r in listing.get("resources") or []):
                return version
        return None

    async def serves(self, gvr: GVR) -> bool:
        """Whether discovery lists ``gvr`` (a 404 on apply is then about the object, not its type)."""
        listing = await self._discovery("/apis", f"{gvr.group}/{gvr.version}") if gvr.group else \
            await self._discovery("/api", gvr.version)
        return bool(listing) and any(r.get("name") == gvr.resource for r in listing.get("resources") or [])

    async def _discovery(self, base: str, path: str) -> dict[str, Any] | None:
        try:
            return await self.request_json("GET", f"{base}/{path}")
        except ClusterError as error:
            if error.not_found:
                return None
            raise

    async def close(self) -> None:
        await self.http.close()


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """A watch's events, one JSON document per line, however long (aiohttp's ``readline`` stops at 128 KiB)."""
    pending = b""
    async for chunk in response.content.iter_any():
        pending += chunk
        if b"\n" not in chunk:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
