"""Garbage collection by ownerReferences, with Background, Foreground and Orphan propagation.

Keeps an in-memory index of dependents by owner uid (loaded at startup from the rows holding
``"ownerReferences"``, read with other components' in one pass: ``apiserver.store.marked``, then fed by the
watch bus).
Only objects that have ownerReferences, tombstones and objects being deleted are decoded, so the
collector costs nothing on the write path of ordinary objects. When an owner disappears, each
dependent is deleted unless another of its owners still exists (then only the dead reference is
dropped); a ``foregroundDeletion`` owner waits until its dependents are gone; an ``orphan`` owner
first strips its reference from its dependents. Owner existence is checked in the store by kind,
name and uid, as kube's collector does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.controllers.namespaces import DELETING
from apiserver.service import Objects
from apiserver.store import Key, LogRow
from apiserver.watch import Entry
from apiserver.writeoptions import DeleteOptions, WriteOptions
from kubeclient.workqueue import Gate, WorkQueue

OWNER_REFERENCES = b'"ownerReferences"'  # in the stored JSON of the objects the collector indexes
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def _interesting(row: LogRow) -> bool:
    return row.deleted or OWNER_REFERENCES in row.value or DELETING in row.value


class GarbageCollector(WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog) -> None:
        super().__init__("garbage-collector")
        self.objects = objects
        self.catalog = catalog
        self.dependents: dict[str, set[Key]] = {}  # owner uid → dependents' keys
        self._refs: dict[Key, list[dict[str, Any]]] = {}  # dependent → its ownerReferences

    def load(self, rows: Iterable[LogRow]) -> None:
        """Index the live objects holding :data:`OWNER_REFERENCES` (the database picked them: the others, most,
        are never copied out of it)."""
        for row in rows:
            self._index(row.key, orjson.loads(row.value))

    def _unindex(self, key: Key) -> None:
        for ref in self._refs.pop(key, []):
            deps = self.dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[ref.get("uid", "")]

    def _index(self, key: Key, obj: dict[str, Any]) -> None:
        self._unindex(key)
        refs = [r for r in obj.get("metadata", {}).get("ownerReferences") or [] if r.get("uid")]
        if refs:
            self._refs[key] = refs
            for ref in refs:
                self.dependents.setdefault(ref["uid"], set()).add(key)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if not (_interesting(entry.row) or key in self._refs):
                continue
            obj = entry.obj()
            meta = obj.get("metadata", {})
            if entry.row.deleted:
                self._unindex(key)
                if meta.get("uid") in self.dependents:
                    self.add(("owner-gone", meta["uid"]))
                continue
            had_refs = key in self._refs
            self._index(key, obj)
            finalizers = meta.get("finalizers") or []
            if meta.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
                self.add(("owner-deleting", key))
            if key in self._refs and not had_refs:
                # A new dependent: its owners may already be gone (kube collects those too).
                self.add(("dependent", key))

    def start(self, gate: Gate | None = None) -> None:
        self.objects.bus.add_listener(self.on_commit)
        super().start(gate)
        for key in list(self._refs):
            self.add(("dependent", key))

    async def handle(self, item: Any) -> bool:
        kind, ref = item
        if kind == "owner-gone":
            for dep in list(self.dependents.get(ref, ())):
                await self._collect(dep)
            return False
        if kind == "dependent":
            await self._collect(ref)
            return False
        return await self._owner_deleting(ref)

    async def _owner_exists(self, dependent: Key, ref: dict[str, Any]) -> bool:
        group = ref.get("apiVersion", "").rpartition("/")[0]
        rtype = self.catalog.by_kind(dependent.space, group, ref.get("kind", ""))
        if rtype is None:
            return False
        namespace = dependent.namespace if rtype.namespaced else ""
        row = await self.objects.run_sync(self.objects.store.get, self.objects.key(
            dependent.space, rtype, namespace, ref.get("name", "")))
        return row is not None and orjson.loads(row.value).get("metadata", {}).get("uid") == ref.get("uid")

    async def _collect(self, key: Key) -> None:
        """Delete a dependent whose owners are all gone; drop references to gone owners otherwise."""
        refs = self._refs.get(key)
        if not refs:
            return
        alive = [r for r in refs if await self._owner_exists(key, r)]
        if len(alive) == len(refs):
            return
        rtype = self.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return
        try:
            if alive:
                dead = {r["uid"] for r in refs} - {r["uid"] for r in alive}
                await self._strip_owners(key, dead)
            else:
                await self.objects.delete(key.space, rtype, key.namespace, key.name,
                                          DeleteOptions(propagation="Background"))
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def _owner_deleting(self, key: Key) -> bool:
        rtype = self.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return False
        try:
            owner = await self.objects.get(key.space, rtype, key.namespace, key.name)
        except StatusError as exc:
            if exc.code == 404:
                return False
            raise
        meta = owner["metadata"]
        uid = meta["uid"]
        finalizers = meta.get("finalizers") or []
        deps = list(self.dependents.get(uid, ()))
        if ORPHAN in finalizers:
            for dep in deps:
                await self._strip_owners(dep, {uid})
            await self.objects.remove_finalizer(key.space, rtype, key.namespace, key.name, ORPHAN)
            return False
        if FOREGROUND in finalizers:
            if deps:
                for dep in deps:
                    dep_type = self.catalog.by_group_resource(dep.space, dep.resource)
                    if dep_type is None:
                        continue
                    await self.objects.delete_if_present(dep.space, dep_type, dep.namespace, dep.name,
                                                         DeleteOptions(propagation="Foreground"))
                return True  # wait until the dependents are really gone
            await self.objects.remove_finalizer(key.space, rtype, key.namespace, key.name, FOREGROUND)
        return False

    async def _strip_owners(self, key: Key, owner_uids: set[str]) -> None:
        rtype = self.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return

        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") not in owner_uids]
            if refs:
                obj["metadata"]["ownerReferences"] = refs
            else:
                obj["metadata"].pop("ownerReferences", None)
            return obj

        try:
            await self.objects.guaranteed_update(key.space, rtype, key.namespace, key.name, compute,
                                                 WriteOptions(manager="spacehub-garbage-collector"))
        except StatusError as exc:
            if exc.code != 404:
                raise
