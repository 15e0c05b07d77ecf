"""A space's pods in its clusters: which clusters to ask, asking them all at once, and finding one pod.

The clusters are the destinations of the space's placements; each is asked through its tunnel with a
deadline, and one that cannot answer (no tunnel connected to this hub process, too slow, an error) is left
out and named in a warning, so that one cluster never fails the whole answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import orjson

from apimachinery.errors import StatusError
from debug.naming import Obj, owned, present, real_names, resolve
from placement.service import PlacementService
from sync.tunnel import TunnelRegistry

log = logging.getLogger(__name__)
DEADLINE = 10.0  # seconds a cluster has to answer a read before it is left out with a warning
# How long where a pod was found is reused by the requests that reach it (log, exec, attach, port-forward,
# delete): finding asks every cluster, and `kubectl logs` of one pod, again and again, would pay it each time.
# A pod deleted meanwhile answers 404 from its cluster (and is looked for anew next time); one recreated in
# another cluster under the same name within this time is reached where it was.
LOCATION_SECONDS = 10.0
MAX_LOCATIONS = 4096
ACCEPT_JSON = (("Accept", "application/json"),)


@dataclass
class Found:
    """What the clusters answered: the shown pods and a warning for each cluster left out (``failed``)."""

    pods: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Located:
    """A shown pod's cluster and real name, as the cluster returned it, and the name it was found by (for a stored
    Pod, its copy's ``<name>.<cluster>``)."""

    cluster: str
    name: str
    pod: Obj
    shown: str


def pods_path(namespace: str | None, name: str = "") -> str:
    base = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    return f"{base}/{name}" if name else base


class ClusterPods:
    """Reads a space's pods from its clusters (``tunnels`` and ``placement`` are looked up per call: the hub
    builds them at startup)."""

    def __init__(self, tunnels: Callable[[], TunnelRegistry], placement: Callable[[], PlacementService]) -> None:
        self.tunnels = tunnels
        self.placement = placement
        self._located: dict[tuple[str, str, str], tuple[float, Located]] = {}  # see LOCATION_SECONDS

    def clusters(self, space: str) -> list[str]:
        """The clusters the space's placements reach, by name; 404 for a space that does not exist."""
        service = self.placement()
        placements = service.placements(space)
        if placements is None:
            raise StatusError(404, "NotFound", f'spaces.spacehub.io "{space}" not found', name=space,
                              group="spacehub.io", kind="spaces")
        names = {str(p["metadata"]["name"]) for p in placements}
        return sorted({d.sync_target_name for name in names for d in service.engine.destinations(space, name)})

    def _owned(self, space: str, cluster: str, pod: Any) -> bool:
        return owned(space, cluster, pod, self.placement().engine.is_destination)

    async def read(self, cluster: str, path: str, query: str = "") -> tuple[int, Any]:
        """GET ``path`` in ``cluster``: its status and decoded JSON body (StatusError, TimeoutError if it fails)."""
        async with asyncio.timeout(DEADLINE):
            response = await self.tunnels().request(cluster, "GET", path, query, ACCEPT_JSON, timeout=DEADLINE)
            async with response:
                body = b"".join([chunk async for chunk in response])
        return response.status, orjson.loads(body) if body else {}

    async def list(self, space: str, namespace: str | None, label_selector: str = "",
                   field_selector: str = "", stored: Collection[tuple[str, str]] = ()) -> Found:
        """The space's pods of every cluster (of ``namespace``; None: all), the selectors applied by the
        clusters, named apart from the space's stored Pods ``stored`` (namespace, name)."""
        clusters = self.clusters(space)
        query = urlencode([(k, v) for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector))
                           if v])
        answers = await asyncio.gather(*(self._items(c, pods_path(namespace), query) for c in clusters))
        found = Found()
        pairs: list[tuple[str, Obj]] = []
        for cluster, (items, warning) in zip(clusters, answers, strict=True):
            if warning:
                found.warnings.append(warning)
                found.failed.append(cluster)
            pairs.extend((cluster, pod) for pod in items if self._owned(space, cluster, pod))
        found.pods = present(pairs, stored)
        return found

    async def _items(self, cluster: str, path: str, query: str) -> tuple[list[Obj], str]:
        try:
            status, body = await self.read(cluster, path, query)
        except Exception as exc:  # whatever went wrong, this cluster is left out and said so
            return [], _warning(cluster, exc)
        if status != 200:
            return [], _warning(cluster, body)
        items = body.get("items") if isinstance(body, dict) else None
        return [p for p in items if isinstance(p, dict)] if isinstance(items, list) else [], ""

    async def find(self, space: str, namespace: str, shown: str,
                   stored: Collection[str] = ()) -> tuple[Located | None, list[str]]:
        """The pod shown as ``shown`` in ``namespace`` (None: no cluster that answered has it), and warnings;
        ``stored``: the names of the space's stored Pods there that ``shown`` may be a copy of."""
        clusters = self.clusters(space)
        names = real_names(shown, clusters)
        asks = [(c, n) for c in clusters for n in names]
        answers = await asyncio.gather(*(self._pod(c, namespace, n) for c, n in asks))
        holders: dict[str, list[str]] = {}
        pods: dict[tuple[str, str], Obj] = {}
        warnings: list[str] = []
        for (cluster, name), (pod, warning) in zip(asks, answers, strict=True):
            if warning and warning not in warnings:
                warnings.append(warning)
            if pod is not None and self._owned(space, cluster, pod):
                holders.setdefault(name, []).append(cluster)
                pods[cluster, name] = pod
        where = resolve(shown, holders, stored)
        return (Located(where[0], where[1], pods[where], shown) if where else None), warnings

    async def locate(self, space: str, namespace: str, shown: str,
                     stored: Collection[str] = ()) -> tuple[Located | None, list[str]]:
        """As :meth:`find`, reusing where the pod was found within :data:`LOCATION_SECONDS` (for requests that
        reach the pod, not for reading it: its content is not kept fresh here)."""
        key = (space, namespace, shown)
        hit = self._located.get(key)
        if hit is not None and time.monotonic() - hit[0] < LOCATION_SECONDS and hit[1].cluster in self.clusters(space):
            return hit[1], []
        located, warnings = await self.find(space, namespace, shown, stored)
        if located is not None:
            if len(self._located) >= MAX_LOCATIONS:
                self._located.clear()
            self._located[key] = (time.monotonic(), located)
        return located, warnings

    def forget(self, space: str, namespace: str, shown: str) -> None:
        """The pod was not where it was found (its cluster answered 404): look for it anew next time."""
        self._located.pop((space, namespace, shown), None)

    async def _pod(self, cluster: str, namespace: str, name: str) -> tuple[Obj | None, str]:
        try:
            status, body = await self.read(cluster, pods_path(namespace, name))
        except Exception as exc:  # as for lists
            return None, _warning(cluster, exc)
        if status == 404:
            return None, ""
        if status != 200 or not isinstance(body, dict):
            return None, _warning(cluster, body)
        return body, ""


def _warning(cluster: str, why: Any) -> str:
    if isinstance(why, StatusError):
        message = why.message
    elif isinstance(why, TimeoutError):
        message = f"no answer within {DEADLINE:.0f}s"
    elif isinstance(why, dict) and why.get("message"):
        message = str(why["message"])
    else:
        log.info("cluster %s: reading its pods failed: %r", cluster, why)
        message = "reading its pods failed"
    return f'cluster "{cluster}": {message}'


def warning_header(warnings: Sequence[str]) -> dict[str, str]:
    """kube's ``Warning`` header (RFC 7234 code 299), which kubectl prints as ``Warning: <text>``."""
    if not warnings:
        return {}
    quoted = (w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings)
    return {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)}
