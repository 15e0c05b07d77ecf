"""Namespaces and spaces: phase indexes, default namespace, and clean-up on deletion.

* A namespaced create must know quickly whether its namespace exists and is not terminating, and
  every request must know whether its space exists: both come from in-memory indexes kept current
  from the watch bus (loaded from the store at startup).
* Deleting a Namespace marks it Terminating; this controller deletes its contents (respecting their
  finalizers), then removes the Namespace. Deleting a Space does the same for a whole space.
* Every new space gets its ``default`` namespace before its creation is acknowledged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from spaces.catalog import ROOT_SPACE, Catalog
from spaces.controllers import Gate, WorkQueue
from spaces.errors import StatusError
from spaces.service import DeleteOptions, Objects, WriteOptions
from spaces.store import Key, PreconditionFailed, Write
from spaces.watch import Entry, decode_object

NAMESPACES = "namespaces"
SPACES = "spaces.spacehub.io"
DEFAULT_NAMESPACES = ("default",)


def _phase(obj: dict[str, Any]) -> str:
    return "Terminating" if obj.get("metadata", {}).get("deletionTimestamp") else "Active"


class Lifecycle:
    def __init__(self, objects: Objects, catalog: Catalog, public_url: str = "") -> None:
        self.objects = objects
        self.public_url = public_url
        self.catalog = catalog
        self.namespaces: dict[tuple[str, str], str] = {}
        self.spaces: dict[str, str] = {ROOT_SPACE: "Active"}
        self.namespace_worker = _NamespaceWorker(self)
        self.space_worker = _SpaceWorker(self)

    # --- indexes ------------------------------------------------------------------------------

    def load(self) -> None:
        """Read current namespaces and spaces from the store (blocking; call at startup)."""
        for row in self.objects.store.list_resource_everywhere(NAMESPACES):
            self.namespaces[(row.key.space, row.key.name)] = _phase(orjson.loads(row.value))
        for row in self.objects.store.list_resource_everywhere(SPACES):
            if row.key.space == ROOT_SPACE:
                self.spaces[row.key.name] = _phase(orjson.loads(row.value))

    def namespace_phase(self, space: str, namespace: str) -> str | None:
        return self.namespaces.get((space, namespace))

    def space_phase(self, space: str) -> str | None:
        return self.spaces.get(space)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if key.resource == NAMESPACES:
                if entry.row.deleted:
                    self.namespaces.pop((key.space, key.name), None)
                    continue
                phase = _phase(entry.obj())
                self.namespaces[(key.space, key.name)] = phase
                if phase == "Terminating":
                    self.namespace_worker.add((key.space, key.name))
            elif key.resource == SPACES and key.space == ROOT_SPACE:
                if entry.row.deleted:
                    self.spaces.pop(key.name, None)
                    continue
                phase = _phase(entry.obj())
                self.spaces[key.name] = phase
                if phase == "Terminating":
                    self.space_worker.add(key.name)

    def start(self, gate: Gate | None = None) -> None:
        self.objects.bus.add_listener(self.on_commit)
        self.objects.after_create.setdefault(SPACES, []).append(self._space_created)
        self.objects.namespace_phase = self.namespace_phase
        self.namespace_worker.start(gate)
        self.space_worker.start(gate)
        for (space, ns), phase in list(self.namespaces.items()):
            if phase == "Terminating":
                self.namespace_worker.add((space, ns))
        for space, phase in list(self.spaces.items()):
            if phase == "Terminating":
                self.space_worker.add(space)

    async def stop(self) -> None:
        await self.namespace_worker.stop()
        await self.space_worker.stop()

    # --- space creation ----------------------------------------------------------------------------

    async def ensure_default_namespaces(self, space: str) -> None:
        ns_type = self.catalog.by_group_resource(space, NAMESPACES)
        assert ns_type is not None
        for name in DEFAULT_NAMESPACES:
            if self.namespace_phase(space, name) is not None:
                continue
            try:
                await self.objects.create(space, ns_type, "", {"metadata": {"name": name}},
                                          WriteOptions(manager="spacehub"))
            except StatusError as exc:
                if exc.code != 409:
                    raise

    async def _space_created(self, _root: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        # The index learns of the new space from the bus, which the writer feeds after the commit
        # this hook follows; set it here too so the namespace create below is accepted at once.
        self.spaces.setdefault(name, "Active")
        await self.ensure_default_namespaces(name)
        space_type = self.catalog.by_group_resource(ROOT_SPACE, SPACES)
        assert space_type is not None

        def ready(space: dict[str, Any]) -> dict[str, Any]:
            space.setdefault("status", {}).update(phase="Ready", url=f"{self.public_url}/clusters/{name}")
            return space

        updated = await self.objects.guaranteed_update(ROOT_SPACE, space_type, "", name, ready,
                                                       WriteOptions(manager="spacehub"), subresource="status")
        # The creator's response shows the space as it is now: Ready, with its URL.
        obj.clear()
        obj.update(updated)

    # --- deletion ----------------------------------------------------------------------------

    async def delete_contents(self, space: str, namespace: str | None) -> int:
        """Delete every object in a namespace (or, with None, in a space); returns how many remain."""
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, None, namespace)
        remaining = 0
        for row in rows:
            if namespace is None and row.key.resource == NAMESPACES:
                continue
            if namespace is not None and row.key.resource == NAMESPACES:
                continue
            rtype = self.catalog.by_group_resource(space, row.key.resource)
            if rtype is None:
                # A kind no longer served (e.g. its CRD is gone): nothing can hold it, drop it.
                await self.objects.purge(space, [row])
                continue
            remaining += 1
            obj = decode_object(row)
            if obj["metadata"].get("deletionTimestamp"):
                continue
            try:
                await self.objects.delete(space, rtype, row.key.namespace, row.key.name,
                                          DeleteOptions(propagation="Background"))
            except StatusError as exc:
                if exc.code != 404:
                    raise
        return remaining

    async def finalize(self, key: Key) -> None:
        """Remove a terminating Namespace/Space whose contents are gone."""
        row = await self.objects.run_sync(self.objects.store.get, key)
        if row is None:
            return
        obj = orjson.loads(row.value)
        if obj["metadata"].get("finalizers"):
            return
        try:
            await self.objects.writer.write(Write(key, row.value, deleted=True, expect=row.revision))
        except PreconditionFailed:
            raise RuntimeError(f"{key} changed while finalizing; retrying") from None


class _NamespaceWorker(WorkQueue):
    def __init__(self, lifecycle: Lifecycle) -> None:
        super().__init__("namespaces")
        self.lc = lifecycle

    async def handle(self, key: Any) -> bool:
        space, name = key
        if self.lc.namespace_phase(space, name) != "Terminating":
            return False
        if await self.lc.delete_contents(space, name):
            return True
        await self.lc.finalize(Key(space, NAMESPACES, "", name))
        return False


class _SpaceWorker(WorkQueue):
    def __init__(self, lifecycle: Lifecycle) -> None:
        super().__init__("spaces")
        self.lc = lifecycle

    async def handle(self, key: Any) -> bool:
        space = key
        if self.lc.space_phase(space) != "Terminating":
            return False
        # A space is removed whole: its objects' finalizers belong to controllers of that space,
        # which go away with it, so everything is purged unconditionally.
        _rev, rows = await self.lc.objects.run_sync(self.lc.objects.store.list, space, None, None)
        if rows:
            await self.lc.objects.purge(space, rows)
            return True
        await self.lc.finalize(Key(ROOT_SPACE, SPACES, "", space))
        return False


