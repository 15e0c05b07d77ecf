"""Watches of the objects a syncer manages in its cluster, one per resource type (``kubeclient.reflector``).

Everything it sees goes to an observer, the syncer (``observed``/``vanished``), which reports status and spots
drift; an object that stops matching the managed label selector counts as vanished, so removing the
syncer's marks is drift too. Managed objects missing from a listing (deleted while nobody watched, e.g.
while the syncer was down) are put back the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubeclient.client import GVR
from kubeclient.reflector import Reflector, Reflectors
from syncer.cluster import Cluster
from syncer.held import MANAGED_LABEL, Held, is_ours

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
        self.watches = Reflectors()

    def ensure(self, gvr: GVR) -> None:
        self.watches.ensure(gvr, lambda: Reflector(self.cluster, gvr, owner=f"syncer {self.target}",
                                                   label_selector=SELECTOR,
                                                   on_list=lambda items: self._listed(gvr, items),
                                                   on_event=lambda kind, obj: self._event(gvr, kind, obj)))

    async def stop(self) -> None:
        await self.watches.stop()

    def _ours(self, obj: dict[str, Any]) -> bool:
        return is_ours(obj, self.target)

    def _event(self, gvr: GVR, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if kind == "DELETED" or not self._ours(obj):
            # Deleted, or still labelled but our target annotation is gone: ours no more.
            self.observer.vanished(gvr, meta.get("namespace") or "", meta.get("name") or "")
        else:
            self.observer.observed(gvr, obj)

    def _listed(self, gvr: GVR, items: list[dict[str, Any]]) -> None:
        present = set()
        for item in items:
            if not self._ours(item):
                continue
            meta = item.get("metadata") or {}
            present.add((meta.get("namespace") or "", meta.get("name") or ""))
            self.observer.observed(gvr, item)
        for held in list(self.held.values()):
            if held.gvr.group == gvr.group and held.gvr.resource == gvr.resource \
                    and (held.namespace, held.name) not in present:
                self.observer.vanished(gvr, held.namespace, held.name)
