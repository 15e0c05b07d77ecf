"""The workload cluster as the syncer sees it: the standard Kubernetes API, through kr8s.

Owns URLs, server-side apply, deletes, reads and watches of arbitrary resources named by (group,
version, resource) — the sync stream names every entry that way, so no discovery is needed, and a type
whose CRD was created a moment ago is reachable at once (upsync rules name only group and resource:
``served_version`` asks discovery). The "cluster" may be a space of another spacehub hub (a child hub,
README "Hubs of hubs"): the same API, and ``hub_clusters`` for what it has in place of Nodes. Errors become
:class:`ClusterError` with the server's ``Status`` reason, or ``Unavailable`` when the cluster could not be
reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import kr8s
import kr8s.asyncio
import orjson

from spaces.kubeconfig import split_server

FIELD_MANAGER = "spacehub-syncer"
HUB_CLUSTERS = "placement/v1/clusters"
REQUEST_TIMEOUT = httpx.Timeout(30.0)
PROBE_TIMEOUT = httpx.Timeout(5.0)
# A watch ends server-side after this long (kubectl's reflectors do the same) and is re-opened from
# its last resourceVersion: a connection silently dropped by something in between is noticed.
WATCH_SECONDS = 300
WATCH_TIMEOUT = httpx.Timeout(30.0, read=WATCH_SECONDS + 30.0)

log = logging.getLogger(__name__)
# kr8s warns about server versions newer than it was tested with; the API calls used here are stable.
warnings.filterwarnings("ignore", message=r"Kubernetes version .* is not supported", category=UserWarning)


@dataclass(frozen=True)
class GVR:
    group: str
    version: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.version}.{self.group}" if self.group else f"{self.resource}.{self.version}"


class ClusterError(Exception):
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


def _error(exc: Exception) -> ClusterError:
    if isinstance(exc, kr8s.ServerError) and exc.response is not None:
        status = exc.status if isinstance(exc.status, dict) else _status_of(exc.response)
        return ClusterError(exc.response.status_code, str(status.get("reason") or "Unknown"),
                            str(status.get("message") or exc))
    return ClusterError(0, "Unavailable", f"cluster unreachable: {exc!r}")


def _status_of(response: httpx.Response) -> dict[str, Any]:
    """The ``Status`` in an error response (kr8s keeps it only for 4xx)."""
    try:
        body = response.json()
    except (ValueError, httpx.ResponseNotRead):
        return {}
    return body if isinstance(body, dict) else {}


def _where(gvr: GVR) -> dict[str, str]:
    # kr8s builds /api/v1/… for version "v1" and /apis/<group>/<version>/… otherwise.
    if gvr.group:
        return {"version": f"{gvr.group}/{gvr.version}", "base": "/apis"}
    return {"version": gvr.version, "base": "/api"}


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


class Cluster:
    """One workload cluster's API. Cheap: many share one process."""

    def __init__(self, api: Any, name: str) -> None:
        self.api = api
        self.name = name
        self.reach = Reachability()

    @classmethod
    async def connect(cls, kubeconfig: str | None, context: str | None = None) -> Cluster:
        """kr8s reads the kubeconfig (``None``: $KUBECONFIG, else in-cluster service account)."""
        api = await kr8s.asyncio.api(kubeconfig=kubeconfig, context=context)
        return cls(api, kubeconfig or "in-cluster")

    @property
    def auth(self) -> Any:
        """kr8s's credentials for this cluster (server, CA, token or client certificate, from the kubeconfig or
        the in-cluster service account), which the pod tunnel's relay uses too (``syncer.relay``)."""
        return self.api.auth

    @contextlib.asynccontextmanager
    async def _request(self, method: str, **kwargs: Any) -> AsyncIterator[Any]:
        """One request to the cluster (kr8s's ``call_api`` arguments): errors as ClusterError, and whether it was
        answered noted in ``reach``."""
        try:
            async with self.api.call_api(method, **kwargs) as response:
                self.reach.answered()
                yield response
        except ClusterError as exc:
            self.reach.failed(exc)
            raise
        except (kr8s.ServerError, httpx.HTTPError, kr8s.APITimeoutError, OSError) as exc:
            error = _error(exc)
            self.reach.failed(error)
            raise error from None

    def _call(self, method: str, gvr: GVR, namespace: str, url: str,
              **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Any]:
        return self._request(method, namespace=namespace or None, url=url, **_where(gvr), **kwargs)

    async def probe(self) -> None:
        """Ask the cluster for its version, only to learn whether it answers (``reach``); never raises."""
        with contextlib.suppress(ClusterError):
            async with self._request("GET", base="/version", version="", timeout=PROBE_TIMEOUT):  # as kr8s asks
                return

    async def apply(self, gvr: GVR, namespace: str, name: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply as ``spacehub-syncer``, forcing: the hub is the authority for what it sends."""
        async with self._call("PATCH", gvr, namespace, f"{gvr.resource}/{name}", content=orjson.dumps(obj),
                              headers={"Content-Type": "application/apply-patch+yaml"},
                              params={"fieldManager": FIELD_MANAGER, "force": "true"},
                              timeout=REQUEST_TIMEOUT) as response:
            return dict(response.json())

    async def merge_patch(self, gvr: GVR, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        async with self._call("PATCH", gvr, namespace, f"{gvr.resource}/{name}", content=orjson.dumps(patch),
                              headers={"Content-Type": "application/merge-patch+json"},
                              params={"fieldManager": FIELD_MANAGER}, timeout=REQUEST_TIMEOUT) as response:
            return dict(response.json())

    async def create(self, gvr: GVR, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        async with self._call("POST", gvr, namespace, gvr.resource, content=orjson.dumps(obj),
                              params={"fieldManager": FIELD_MANAGER}, timeout=REQUEST_TIMEOUT) as response:
            return dict(response.json())

    async def get(self, gvr: GVR, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            async with self._call("GET", gvr, namespace, f"{gvr.resource}/{name}", timeout=REQUEST_TIMEOUT) as r:
                return dict(r.json())
        except ClusterError as exc:
            if exc.not_found:
                return None
            raise

    async def delete(self, gvr: GVR, namespace: str, name: str) -> None:
        """Delete in the background (dependents by the cluster's GC); an absent object is fine."""
        body = orjson.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        try:
            async with self._call("DELETE", gvr, namespace, f"{gvr.resource}/{name}", content=body,
                                  timeout=REQUEST_TIMEOUT):
                return
        except ClusterError as exc:
            if not exc.not_found:
                raise

    async def list(self, gvr: GVR, label_selector: str, *, namespace: str = "",
                   field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        """All objects of the type (every namespace, or one) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"labelSelector": label_selector, "limit": 500}
        if field_selector:
            params["fieldSelector"] = field_selector
        while True:
            async with self._call("GET", gvr, namespace, gvr.resource, params=params, timeout=REQUEST_TIMEOUT) as r:
                page = r.json()
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion") or "")
            params["continue"] = meta["continue"]

    async def watch(self, gvr: GVR, label_selector: str, resource_version: str, *, namespace: str = "",
                    field_selector: str = "") -> AsyncIterator[dict[str, Any]]:
        """Watch events after ``resource_version`` until the server ends the watch (raises 410 as Gone)."""
        params = {"watch": "true", "labelSelector": label_selector, "resourceVersion": resource_version,
                  "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_SECONDS)}
        if field_selector:
            params["fieldSelector"] = field_selector
        async with self._call("GET", gvr, namespace, gvr.resource, params=params, stream=True,
                              timeout=WATCH_TIMEOUT) as response:
            self.reach.watching += 1
            try:
                async for line in response.aiter_lines():
                    if not line:
                        continue
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise ClusterError(int(obj.get("code") or 500), str(obj.get("reason") or "Unknown"),
                                           str(obj.get("message") or "watch error"))
                    yield event
            except (httpx.HTTPError, OSError) as exc:
                raise _error(exc) from None
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
            async with self._request("GET", base=base, version="", url=path, timeout=REQUEST_TIMEOUT) as r:
                return dict(r.json())
        except ClusterError as error:
            if error.not_found:
                return None
            raise

    async def nodes(self) -> list[dict[str, Any]]:
        items, _ = await self.list(GVR("", "v1", "nodes"), "")
        return items

    async def hub_clusters(self) -> list[dict[str, Any]] | None:
        """When this "cluster" is a space of a spacehub hub (its server ends in ``/clusters/<space>``), the
        hub's own clusters as its placement API lists them (``GET /placement/v1/clusters``: name, readiness,
        capacity and allocatable); None for a server that is not one."""
        base, space = split_server(str(self.api.auth.server))
        if space is None:
            return None
        try:
            # An absolute URL: the client's base is the space, the placement API is beside the spaces.
            async with self._request("GET", base=base, version="", url=HUB_CLUSTERS, timeout=REQUEST_TIMEOUT) as r:
                return list(r.json().get("items") or [])
        except ClusterError as error:
            if error.not_found:
                return None
            raise

    async def close(self) -> None:
        session = getattr(self.api, "_session", None)
        if session is not None:
            with contextlib.suppress(Exception):
                await session.aclose()
