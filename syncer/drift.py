"""Watches of the objects a syncer manages in its cluster, one per resource type.

Each watch lists (the state now) and then watches from the list's resourceVersion, re-listing after a
410. Everything it sees goes to an observer, the syncer (``observed``/``vanished``), which reports status and spots
drift; an object that stops matching the managed label selector counts as vanished, so removing the
syncer's marks is drift too. Managed objects missing from a listing (deleted while nobody watched, e.g.
while the syncer was down) are put back the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from syncer.backoff import Backoff
from syncer.cluster import GVR, Cluster, ClusterError
from syncer.held import MANAGED_LABEL, Held, is_ours

log = logging.getLogger(__name__)
SELECTOR = f"{MANAGED_LABEL}=true"


class Observer(Protocol):
    """Who hears what the watches see (the syncer)."""

    def observed(self, gvr: GVR, live: dict[str, Any]) -> None: ...

    def vanished(self, gvr: GVR, namespace: str, name: str) -> None: ...


class DriftWatcher:
    def __init__(self, cluster: Cluster, target: str, held: Mapping[str, Held], observer: Observer) -> None:
        self.cluster = cluster
        self.target = target
        self.held = held  # the syncer's own map of what it manages, read when a listing comes back
        self.observer = observer
        self.tasks: dict[GVR, asyncio.Task[None]] = {}

    def ensure(self, gvr: GVR) -> None:
        if gvr not in self.tasks:
            self.tasks[gvr] = asyncio.get_running_loop().create_task(self._run(gvr), name=f"watch {gvr}")

    async def stop(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()

    def _ours(self, obj: dict[str, Any]) -> bool:
        return is_ours(obj, self.target)

    async def _run(self, gvr: GVR) -> None:
        cluster, target = self.cluster, self.target
        backoff = Backoff(0.5, 30.0)
        while True:
            try:
                items, rv = await cluster.list(gvr, SELECTOR)
                self._listed(gvr, [item for item in items if self._ours(item)])
                backoff.reset()
                while True:
                    async for event in cluster.watch(gvr, SELECTOR, rv):
                        obj = event.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        kind = event.get("type")
                        if kind == "BOOKMARK":
                            continue
                        meta = obj.get("metadata") or {}
                        if kind == "DELETED":
                            self.observer.vanished(gvr, meta.get("namespace") or "", meta.get("name") or "")
                        elif self._ours(obj):
                            self.observer.observed(gvr, obj)
                        else:  # still labelled, but our target annotation is gone: ours no more
                            self.observer.vanished(gvr, meta.get("namespace") or "", meta.get("name") or "")
            except ClusterError as exc:
                if exc.gone:
                    continue  # our resourceVersion is too old: list again
                delay = backoff.next()
                # 404: the type is not served (yet): its CRD is being created or was deleted.
                level = logging.DEBUG if exc.not_found else logging.INFO
                log.log(level, "syncer %s: watch of %s failed (%s), again in %.1fs: %s", target, gvr, exc.reason,
                        delay, exc.message)
                await asyncio.sleep(delay)

    def _listed(self, gvr: GVR, items: list[dict[str, Any]]) -> None:
        present = set()
        for item in items:
            meta = item.get("metadata") or {}
            present.add((meta.get("namespace") or "", meta.get("name") or ""))
            self.observer.observed(gvr, item)
        for held in list(self.held.values()):
            if held.gvr.group == gvr.group and held.gvr.resource == gvr.resource \
                    and (held.namespace, held.name) not in present:
                self.observer.vanished(gvr, held.namespace, held.name)
