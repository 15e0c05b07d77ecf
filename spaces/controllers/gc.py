"""Garbage collection by ownerReferences, with Background, Foreground and Orphan propagation.

Keeps an in-memory graph of live objects by uid and of dependents by owner uid (loaded at startup,
then fed by the watch bus). When an owner disappears its dependents are deleted unless another live
owner remains; a ``foregroundDeletion`` owner waits until its dependents are gone; an ``orphan``
owner first strips its ownerReferences from its dependents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from spaces.catalog import Catalog
from spaces.controllers import WorkQueue
from spaces.errors import StatusError
from spaces.service import DeleteOptions, Objects, WriteOptions
from spaces.store import Key
from spaces.watch import Entry

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def _owner_uids(obj: dict[str, Any]) -> set[str]:
    return {ref.get("uid", "") for ref in obj.get("metadata", {}).get("ownerReferences") or [] if ref.get("uid")}


class GarbageCollector(WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog) -> None:
        super().__init__("garbage-collector")
        self.objects = objects
        self.catalog = catalog
        self.alive: dict[str, Key] = {}  # uid → key of every live object
        self.dependents: dict[str, set[Key]] = {}  # owner uid → dependents' keys
        self._owners_of: dict[Key, set[str]] = {}
        self._uid_of: dict[Key, str] = {}

    def load(self) -> None:
        for row in self.objects.store.list_spaces_rows():
            self._observe(row.key, orjson.loads(row.value), deleted=False)

    def _observe(self, key: Key, obj: dict[str, Any], deleted: bool) -> None:
        uid = obj.get("metadata", {}).get("uid", "")
        for owner in self._owners_of.pop(key, set()):
            deps = self.dependents.get(owner)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[owner]
        old_uid = self._uid_of.pop(key, None)
        if old_uid is not None:
            self.alive.pop(old_uid, None)
        if deleted:
            return
        if uid:
            self.alive[uid] = key
            self._uid_of[key] = uid
        owners = _owner_uids(obj)
        if owners:
            self._owners_of[key] = owners
            for owner in owners:
                self.dependents.setdefault(owner, set()).add(key)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            obj = entry.obj()
            meta = obj.get("metadata", {})
            uid = meta.get("uid", "")
            self._observe(entry.row.key, obj, entry.row.deleted)
            if entry.row.deleted:
                if uid in self.dependents:
                    self.add(("owner-gone", uid))
            else:
                finalizers = meta.get("finalizers") or []
                if meta.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
                    self.add(("owner-deleting", entry.row.key))
                owners = _owner_uids(obj)
                if owners and not any(o in self.alive for o in owners):
                    # Created with (or left with) only owners that no longer exist.
                    self.add(("dangling", entry.row.key))

    def start(self) -> None:
        self.objects.bus.add_listener(self.on_commit)
        super().start()
        for key in list(self._owners_of):
            if not any(o in self.alive for o in self._owners_of[key]):
                self.add(("dangling", key))

    async def handle(self, item: Any) -> bool:
        kind, ref = item
        if kind == "owner-gone":
            for dep in list(self.dependents.get(ref, ())):
                await self._collect(dep)
            return False
        if kind == "dangling":
            await self._collect(ref)
            return False
        return await self._owner_deleting(ref)

    async def _collect(self, key: Key) -> None:
        """Delete a dependent if none of its owners is alive any more."""
        owners = self._owners_of.get(key)
        if not owners or any(o in self.alive for o in owners):
            return
        rtype = self.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return
        try:
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
                await self._strip_owner(dep, uid)
            await self.objects.remove_finalizer(key.space, rtype, key.namespace, key.name, ORPHAN)
            return False
        if FOREGROUND in finalizers:
            if deps:
                for dep in deps:
                    dep_type = self.catalog.by_group_resource(dep.space, dep.resource)
                    if dep_type is None:
                        continue
                    try:
                        await self.objects.delete(dep.space, dep_type, dep.namespace, dep.name,
                                                  DeleteOptions(propagation="Foreground"))
                    except StatusError as exc:
                        if exc.code != 404:
                            raise
                return True  # wait until the dependents are really gone
            await self.objects.remove_finalizer(key.space, rtype, key.namespace, key.name, FOREGROUND)
        return False

    async def _strip_owner(self, key: Key, owner_uid: str) -> None:
        rtype = self.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return

        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
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
