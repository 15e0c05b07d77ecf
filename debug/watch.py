"""``kubectl get pods -w`` in a space: the stored Pods' events from the store's log, merged with the changes of
the clusters' pods the space shows.

The stored Pods are watched as any stored kind (``apiserver.api.watchstream``: resumable from a
resourceVersion, 410 Expired when it was compacted, bookmarks). The clusters' pods are polled through their
tunnels every :data:`CLUSTER_POLL` seconds and their differences sent as ADDED, MODIFIED and DELETED: a pod is
keyed by the name it is shown by, and changes when its cluster's resourceVersion does. Each cluster pod's event
carries as its resourceVersion the store revision of the last stored event sent before it (or the one the watch
started from), so that whatever resourceVersion a client resumes from is a revision of the store: the stored
Pods resume exactly from it. The clusters' pods cannot be resumed (a cluster's own history is not kept): a watch
from a resourceVersion reports them as they change from the moment it starts, one from "" or "0" first sends
them all as ADDED, as kube does for initial events. A cluster that does not answer a poll keeps the pods it had.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson

from apiserver.api.tables import to_table
from apiserver.api.watchstream import WatchRequest, WatchStream
from debug.fleet import ClusterPods, Found
from debug.naming import CLUSTER_LABEL, Obj
from debug.stored import StoredPods

log = logging.getLogger(__name__)
CLUSTER_POLL = 2.0  # seconds between two looks at the clusters' pods of one watch
_Shown = dict[tuple[str, str], Obj]  # (namespace, shown name) -> the cluster's pod as shown


class PodsWatch:
    def __init__(self, fleet: ClusterPods, stored: StoredPods, req: WatchRequest, label_selector: str,
                 field_selector: str) -> None:
        self.fleet = fleet
        self.stored = stored
        self.req = req
        self.selectors = (label_selector, field_selector)
        self.revision = ""  # the store revision the next cluster event carries

    async def body(self) -> AsyncIterator[bytes]:
        req = self.req
        initial = req.resource_version in ("", "0")
        # Taken before the store's stream starts, so never later than its start: a client resuming from it
        # may see a stored event twice, never miss one.
        self.revision = (await self.stored.list(req.space, req.namespace)).resource_version if initial \
            else req.resource_version
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        stored = asyncio.create_task(self._stored(queue))
        clusters = asyncio.create_task(self._clusters(queue, initial))
        try:
            while (chunk := await queue.get()) is not None:
                yield chunk
        finally:
            for task in (stored, clusters):
                task.cancel()
            await asyncio.gather(stored, clusters, return_exceptions=True)

    async def _stored(self, queue: asyncio.Queue[bytes | None]) -> None:
        try:
            async for chunk in WatchStream(self.stored.space_api().objects, self.req).body():
                self.revision = _revision_of(chunk) or self.revision
                queue.put_nowait(chunk)
        finally:
            queue.put_nowait(None)  # the store's stream ended (its timeout, a 410): so does the watch

    async def _clusters(self, queue: asyncio.Queue[bytes | None], initial: bool) -> None:
        before: _Shown | None = {} if initial else None
        while True:
            try:
                found = await self._found()
            except Exception as exc:  # a space gone, a store outage: the stored side reports it; look again later
                log.info("watching the clusters' pods of %s failed: %r", self.req.space, exc)
            else:
                now = _shown(found, before or {})
                if before is not None:
                    for kind, pod in _differences(before, now):
                        queue.put_nowait(self._encode(kind, pod))
                before = now
            await asyncio.sleep(CLUSTER_POLL)

    async def _found(self) -> Found:
        space, namespace = self.req.space, self.req.namespace
        keys = await self.stored.keys(space, namespace)
        return await self.fleet.list(space, namespace, *self.selectors, stored=keys)

    def _encode(self, kind: str, pod: Obj) -> bytes:
        obj = {**pod, "metadata": {**pod["metadata"], "resourceVersion": self.revision}}
        if self.req.table_version is not None:
            obj = to_table(self.req.rtype, [obj], version=self.req.table_version, include=self.req.include_object,
                           headers=False)
        return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def _key(pod: Obj) -> tuple[str, str]:
    return str(pod["metadata"].get("namespace") or ""), str(pod["metadata"]["name"])


def _shown(found: Found, before: _Shown) -> _Shown:
    """The pods shown now, those of a cluster that did not answer as they were."""
    now = {_key(p): p for p in found.pods}
    for key, pod in before.items():
        if pod["metadata"]["labels"].get(CLUSTER_LABEL) in found.failed:
            now.setdefault(key, pod)
    return now


def _differences(before: _Shown, now: _Shown) -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = [("DELETED", pod) for key, pod in before.items() if key not in now]
    for key, pod in now.items():
        old = before.get(key)
        if old is None:
            out.append(("ADDED", pod))
        elif _version(old) != _version(pod):
            out.append(("MODIFIED", pod))
    return out


def _version(pod: Obj) -> tuple[Any, Any]:
    meta = pod["metadata"]
    return meta["labels"].get(CLUSTER_LABEL), meta.get("resourceVersion")


def _revision_of(chunk: bytes) -> str:
    """The store revision a stored event carries ("" for an error): its object's, or its table row's."""
    event = orjson.loads(chunk)
    obj = event.get("object") or {}
    if obj.get("kind") == "Table":
        rows = obj.get("rows") or []
        obj = (rows[0].get("object") or {}) if rows else {}
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
