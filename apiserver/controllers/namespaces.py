"""Namespaces: the phase index, the default namespaces, and clean-up on deletion.

* A namespaced create must know quickly whether its namespace exists and is not terminating: the index is
  kept current from the watch bus (loaded from the store at startup).
* Deleting a Namespace marks it Terminating; this controller deletes its contents (respecting their
  finalizers), then removes the Namespace.
* Every space gets kube's system namespaces (``DEFAULT_NAMESPACES``) from whoever creates it, and those
  already there get any they lack when the hub starts (``spaces.seeding``).
* ``default``, ``kube-system`` and ``kube-public`` cannot be deleted (kube's NamespaceLifecycle admission).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.service import Objects
from apiserver.sharedtables import SharedTables
from apiserver.store import Key, LogRow, PreconditionFailed, Write
from apiserver.watch import Entry, decode_object
from apiserver.writeoptions import DeleteOptions
from kubeclient.workqueue import Gate, WorkQueue

NAMESPACES = "namespaces"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


# In the stored JSON of every object being deleted (the runtime's start-up read finds them by it).
DELETING = b'"deletionTimestamp"'


def phase_of(obj: dict[str, Any]) -> str:
    return "Terminating" if obj.get("metadata", {}).get("deletionTimestamp") else "Active"


async def finalize(objects: Objects, key: Key) -> None:
    """Remove a terminating object whose contents are gone (a Namespace, a Space) unless a finalizer holds it."""
    row = await objects.run_sync(objects.store.get, key)
    if row is None:
        return
    obj = orjson.loads(row.value)
    if obj["metadata"].get("finalizers"):
        return
    try:
        await objects.writer.write(Write(key, row.value, deleted=True, expect=row.revision))
    except PreconditionFailed:
        raise RuntimeError(f"{key} changed while finalizing; retrying") from None


class NamespaceController:
    def __init__(self, objects: Objects, catalog: Catalog) -> None:
        self.objects = objects
        self.catalog = catalog
        # Each space's namespaces' phases: most spaces hold only their four default namespaces, all Active, in
        # one table they share.
        self.phases: SharedTables[str, str] = SharedTables()
        self.worker = _NamespaceWorker(self)

    def load(self, deleting: Iterable[LogRow]) -> None:
        """Read current namespaces from the store (blocking; call at startup): their names, all Active but those
        among ``deleting`` (the start-up read's rows holding :data:`DELETING`) that are Terminating. Only those
        few are decoded, not 40,000 namespaces of 10,000 spaces."""
        for key in self.objects.store.keys_everywhere(NAMESPACES):
            self.phases.set(key.space, key.name, "Active")
        for row in deleting:
            if row.key.resource == NAMESPACES and phase_of(orjson.loads(row.value)) == "Terminating":
                self.phases.set(row.key.space, row.key.name, "Terminating")

    def phase(self, space: str, namespace: str) -> str | None:
        return self.phases.get(space, namespace)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if key.resource != NAMESPACES:
                continue
            if entry.row.deleted:
                self.phases.pop(key.space, key.name)
                continue
            phase = phase_of(entry.obj())
            self.phases.set(key.space, key.name, phase)
            if phase == "Terminating":
                self.worker.add((key.space, key.name))

    def start(self, gate: Gate | None = None) -> None:
        self.objects.bus.add_listener(self.on_commit)
        self.objects.before_delete.setdefault(NAMESPACES, []).append(refuse_immortal)
        self.objects.namespace_phase = self.phase
        self.worker.start(gate)
        for space, ns, phase in self.phases.items():
            if phase == "Terminating":
                self.worker.add((space, ns))

    async def stop(self) -> None:
        await self.worker.stop()

    async def delete_contents(self, space: str, namespace: str) -> int:
        """Delete every object in a namespace; returns how many remain."""
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, None, namespace)
        remaining = 0
        for row in rows:
            if row.key.resource == NAMESPACES:
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
            await self.objects.delete_if_present(space, rtype, row.key.namespace, row.key.name,
                                                 DeleteOptions(propagation="Background"))
        return remaining


async def refuse_immortal(_space: str, namespace: dict[str, Any]) -> None:
    """Refuse to delete a namespace kube never lets go of (``Objects.before_delete``)."""
    name = namespace["metadata"]["name"]
    if name in IMMORTAL_NAMESPACES:
        raise StatusError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                          name=name, kind=NAMESPACES)


class _NamespaceWorker(WorkQueue):
    def __init__(self, namespaces: NamespaceController) -> None:
        super().__init__("namespaces")
        self.namespaces = namespaces

    async def handle(self, key: Any) -> bool:
        space, name = key
        if self.namespaces.phase(space, name) != "Terminating":
            return False
        if await self.namespaces.delete_contents(space, name):
            return True
        await finalize(self.namespaces.objects, Key(space, NAMESPACES, "", name))
        return False
