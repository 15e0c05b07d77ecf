"""Upsync, the cluster's side: objects the hub's ``UPSYNC`` rules name, watched and sent up (``POST …/upsync``).

Each ``UPSYNC`` message replaces the rules. For each (group, resource) they name, the version comes from
the cluster's discovery and one cluster-wide watch (``kubeclient.reflector``) keeps the matching objects in
memory; objects the syncer manages itself are never sent (upsync never echoes downsync). Changes go up as
``UPSERT``/``DELETE``, in the space's namespace when its mapping writes it under another name in the cluster
(the rules' ``spaceNamespaces``); after every listing and every ``UPSYNC`` message the whole listing of each (space,
group, resource) goes up marked ``complete``, which is how the hub learns of deletions it missed. Sending
is coalesced per object, retried with backoff while the hub is away, and bounded by the objects matched.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
from collections.abc import Mapping
from typing import Any

from kubeclient.backoff import Backoff
from kubeclient.client import GVR, ClusterError
from kubeclient.reflector import Reflector, Reflectors
from syncer.cluster import Cluster
from syncer.held import MANAGED_LABEL
from syncer.hubclient import HubClient, HubError

log = logging.getLogger(__name__)
MAX_BATCH = 5_000  # objects per POST (the hub takes up to 10,000)
UNSERVED_RETRY_SECONDS = 30.0
Kind = tuple[str, str]  # (group, resource)
ObjectKey = tuple[str, str]  # (namespace, name)


def rule_allows(rule: Mapping[str, Any], namespace: str, name: str) -> bool:
    """KubeStellar's namespace and name tests of an upsync rule (group and resource are matched by kind)."""
    namespaces = rule.get("namespaces") or []
    if namespace:
        if not any(ns == "*" or fnmatch.fnmatchcase(namespace, ns) for ns in namespaces):
            return False
    elif namespaces and "*" not in namespaces:
        return False
    names = rule.get("names") or []
    return not names or any(n == "*" or fnmatch.fnmatchcase(name, n) for n in names)


class Upsyncer:
    def __init__(self, cluster: Cluster, hub: HubClient, target: str, interval: float) -> None:
        self.cluster = cluster
        self.hub = hub
        self.target = target
        self.interval = interval
        self.rules: list[dict[str, Any]] = []
        self.watches = Reflectors()
        self._versions: dict[Kind, str] = {}
        self._objects: dict[Kind, dict[ObjectKey, dict[str, Any]]] = {}  # what each watch has listed
        self._pending: dict[tuple[str, Kind, ObjectKey], dict[str, Any]] = {}  # (space, kind, key) -> op
        self._space_namespaces: dict[str, dict[str, str]] = {}
        self._complete: set[tuple[str, Kind]] = set()  # (space, kind) whose whole listing is due
        self.wake = asyncio.Event()
        self.connected: asyncio.Event | None = None

    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        """An ``UPSYNC`` message: the rules now, complete; every listing is sent again."""
        self.rules = [r for r in rules if isinstance(r, dict) and r.get("space")]
        # Per space, its namespace by the cluster's where they differ (namespaceMapping): what goes up is named so.
        self._space_namespaces = {}
        for rule in self.rules:
            self._space_namespaces.setdefault(rule["space"], {}).update(rule.get("spaceNamespaces") or {})
        wanted = {(str(r.get("apiGroup") or ""), str(res)) for r in self.rules for res in r.get("resources") or []
                  if res != "*"}
        for kind in set(self.watches.keys()) - wanted:  # no rule names it any more
            self.watches.drop(kind)
            self._objects.pop(kind, None)
        for kind in wanted:
            self.watches.ensure(kind, lambda kind=kind: _Discovering(self, kind))  # type: ignore[misc]
        self._complete = {(r["space"], kind) for r in self.rules for kind in wanted if self._names(r, kind)}
        self._pending = {k: v for k, v in self._pending.items() if (k[0], k[1]) in self._complete}
        self.wake.set()

    @staticmethod
    def _names(rule: Mapping[str, Any], kind: Kind) -> bool:
        return str(rule.get("apiGroup") or "") == kind[0] and kind[1] in (rule.get("resources") or [])

    def _spaces(self, kind: Kind, namespace: str, name: str) -> dict[str, str]:
        """The spaces (with the first placement asking) whose rules want this object."""
        out: dict[str, str] = {}
        for rule in self.rules:
            if self._names(rule, kind) and rule_allows(rule, namespace, name):
                out.setdefault(rule["space"], str(rule.get("placement") or ""))
        return out

    # --- what the watches see ------------------------------------------------------------------

    def listed(self, kind: Kind, items: list[dict[str, Any]]) -> None:
        self._objects[kind] = {_key(o): o for o in items if not _managed(o)}
        self._complete |= {(r["space"], kind) for r in self.rules if self._names(r, kind)}
        self.wake.set()

    def event(self, kind: Kind, event_type: str, obj: dict[str, Any]) -> None:
        if _managed(obj):
            return
        key = _key(obj)
        objects = self._objects.setdefault(kind, {})
        if event_type == "DELETED":
            objects.pop(key, None)
        else:
            objects[key] = obj
        for space, placement in self._spaces(kind, *key).items():
            self._pending[(space, kind, key)] = self._item(space, placement, kind, key,
                                                           None if event_type == "DELETED" else obj)
        self.wake.set()

    def _item(self, space: str, placement: str, kind: Kind, key: ObjectKey,
              obj: dict[str, Any] | None) -> dict[str, Any]:
        item: dict[str, Any] = {"op": "DELETE" if obj is None else "UPSERT", "space": space, "placement": placement,
                                "group": kind[0], "version": self._versions.get(kind, ""), "resource": kind[1],
                                "namespace": self._space_namespaces.get(space, {}).get(key[0], key[0]), "name": key[1]}
        if obj is not None:
            item["object"] = obj
        return item

    # --- sending ---------------------------------------------------------------------------------

    async def run(self) -> None:
        backoff = Backoff(1.0, 30.0)
        while True:
            await self.wake.wait()
            if self.connected is not None:
                await self.connected.wait()
            self.wake.clear()
            objects, complete, batch = self._batch()
            if objects or complete:
                try:
                    await self.hub.upsync(objects, complete)
                    backoff.reset()
                except HubError as exc:
                    self._requeue(batch)
                    delay = backoff.next()
                    level = logging.INFO if exc.code == 404 else logging.WARNING
                    log.log(level, "syncer %s: upsync failed (%s), again in %.0fs: %s", self.target, exc.reason,
                            delay, exc.message)
                    await asyncio.sleep(delay)
            if self._pending or self._complete:
                self.wake.set()
            await asyncio.sleep(self.interval)

    def _batch(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
        objects: list[dict[str, Any]] = []
        complete: list[dict[str, Any]] = []
        taken_complete: set[tuple[str, Kind]] = set()
        for space, kind in sorted(self._complete):
            listing = [(key, obj) for key, obj in sorted(self._objects.get(kind, {}).items())
                       if space in self._spaces(kind, *key)]
            if kind not in self._objects or (objects and len(objects) + len(listing) > MAX_BATCH):
                continue  # not listed yet, or the next request
            for key, obj in listing:
                objects.append(self._item(space, self._spaces(kind, *key)[space], kind, key, obj))
                self._pending.pop((space, kind, key), None)
            complete.append({"space": space, "group": kind[0], "resource": kind[1]})
            taken_complete.add((space, kind))
        self._complete -= taken_complete
        taken_pending = []
        while self._pending and len(objects) < MAX_BATCH:
            key = next(iter(self._pending))
            objects.append(self._pending.pop(key))
            taken_pending.append((key, objects[-1]))
        return objects, complete, (taken_complete, taken_pending)

    def _requeue(self, batch: Any) -> None:
        taken_complete, taken_pending = batch
        self._complete |= taken_complete
        for key, item in taken_pending:
            self._pending.setdefault(key, item)

    async def stop(self) -> None:
        await self.watches.stop()


class _Discovering:
    """A watch loop that first finds the version the cluster serves its kind at (its CRD may come later)."""

    def __init__(self, upsyncer: Upsyncer, kind: Kind) -> None:
        self.upsyncer = upsyncer
        self.kind = kind

    async def run(self) -> None:
        up = self.upsyncer
        while True:
            try:
                version = await up.cluster.served_version(*self.kind)
            except ClusterError as exc:
                version = None
                log.info("syncer %s: discovery of %s/%s failed: %s", up.target, *self.kind, exc.message)
            if version:
                break
            log.info("syncer %s: the cluster serves no %s.%s to upsync; looking again in %.0fs", up.target,
                     self.kind[1], self.kind[0] or "core", UNSERVED_RETRY_SECONDS)
            await asyncio.sleep(UNSERVED_RETRY_SECONDS)
        up._versions[self.kind] = version
        await Reflector(up.cluster, GVR(self.kind[0], version, self.kind[1]), owner=f"syncer {up.target}",
                        on_list=lambda items: up.listed(self.kind, items),
                        on_event=lambda kind, obj: up.event(self.kind, kind, obj)).run()


def _key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _managed(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_LABEL) == "true"
