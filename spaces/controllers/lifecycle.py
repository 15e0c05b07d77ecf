"""Namespaces and spaces: phase indexes, default namespace, and clean-up on deletion.

* A namespaced create must know quickly whether its namespace exists and is not terminating, and
  every request must know whether its space exists: both come from in-memory indexes kept current
  from the watch bus (loaded from the store at startup).
* Deleting a Namespace marks it Terminating; this controller deletes its contents (respecting their
  finalizers), then removes the Namespace. Deleting a Space does the same for a whole space and, bottom-up,
  for the spaces below it (``spaces.hierarchy``): its child Spaces are deleted at once (each Terminating,
  doing the same below it), its other contents purged, and its own Space object removed after the last child
  is gone. Finalizers on objects inside a space do not hold it; a finalizer on a Space object holds that
  Space (emptied, Terminating) and so each space above it, until someone removes the finalizer.
* Every new space gets its ``default`` namespace before its creation is acknowledged; a new Space is refused
  in a terminating space, or deeper or longer than ``spaces.hierarchy`` allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from spaces import errors
from spaces.builtin.strategies.spaces import KUBE, provider_of
from spaces.catalog import ROOT_SPACE, Catalog
from spaces.controllers import Gate, WorkQueue
from spaces.errors import Cause, StatusError
from spaces.hierarchy import base_name, child_causes, child_id, full_path, parent_id
from spaces.service import DeleteOptions, Objects, WriteOptions
from spaces.store import Key, LogRow, PreconditionFailed, Write
from spaces.watch import Entry, decode_object

NAMESPACES = "namespaces"
SPACES = "spaces.spacehub.io"
SPACE_GROUP = "spacehub.io"
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
        # Spaces served by a Kubernetes API server (``spaces.providers``): the hub stores none of their objects,
        # so they get no default namespace (nor roles) here.
        self.kube_spaces: set[str] = set()
        self.namespace_worker = _NamespaceWorker(self)
        self.space_worker = _SpaceWorker(self)

    # --- indexes ------------------------------------------------------------------------------

    def load(self) -> None:
        """Read current namespaces and spaces from the store (blocking; call at startup)."""
        for row in self.objects.store.list_resource_everywhere(NAMESPACES):
            self.namespaces[(row.key.space, row.key.name)] = _phase(orjson.loads(row.value))
        for row in self.objects.store.list_resource_everywhere(SPACES):
            obj = orjson.loads(row.value)
            self.spaces[child_id(row.key.space, row.key.name)] = _phase(obj)
            if provider_of(obj) == KUBE:
                self.kube_spaces.add(child_id(row.key.space, row.key.name))

    def namespace_phase(self, space: str, namespace: str) -> str | None:
        return self.namespaces.get((space, namespace))

    def space_phase(self, space: str) -> str | None:
        """The phase of a space by its id (``spaces.hierarchy``); None when there is no such space."""
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
            elif key.resource == SPACES:
                space = child_id(key.space, key.name)
                # A child gone may be the last one a terminating parent waits for; one created in a terminating
                # parent (by a racing hub process) is for that parent to delete.
                if self.spaces.get(key.space) == "Terminating":
                    self.space_worker.add(key.space)
                if entry.row.deleted:
                    self.spaces.pop(space, None)
                    self.kube_spaces.discard(space)
                    continue
                phase = _phase(entry.obj())
                self.spaces[space] = phase
                if provider_of(entry.obj()) == KUBE:
                    self.kube_spaces.add(space)
                if phase == "Terminating":
                    self.space_worker.add(space)

    def start(self, gate: Gate | None = None) -> None:
        self.objects.bus.add_listener(self.on_commit)
        self.objects.before_create.setdefault(SPACES, []).append(self._check_new_space)
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

    def _check_new_space(self, parent: str, obj: dict[str, Any]) -> None:
        """Refuse a Space in a terminating space (kube's answer for a terminating namespace), and one whose
        path would be deeper or longer than ``spaces.hierarchy`` allows (422, naming ``metadata.name``)."""
        name = str(obj["metadata"]["name"])
        if self.space_phase(parent) == "Terminating":
            reason = f"space {full_path(parent)} is being terminated"
            raise StatusError(403, "Forbidden", f'spaces.{SPACE_GROUP} "{name}" is forbidden: unable to create '
                              f"new content in space {full_path(parent)} because it is being terminated",
                              name=name, group=SPACE_GROUP, kind="spaces",
                              causes=[Cause("SpaceTerminating", reason, "metadata.name")])
        causes = child_causes(parent, name)
        if causes:
            raise errors.invalid("Space", SPACE_GROUP, name, causes)

    async def _space_created(self, parent: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        space = child_id(parent, name)
        # The index learns of the new space from the bus, which the writer feeds after the commit
        # this hook follows; set it here too so the namespace create below is accepted at once.
        self.spaces.setdefault(space, "Active")
        if provider_of(obj) == KUBE:
            self.kube_spaces.add(space)
        else:
            await self.ensure_default_namespaces(space)
        space_type = self.catalog.by_group_resource(parent, SPACES)
        assert space_type is not None

        def ready(space_obj: dict[str, Any]) -> dict[str, Any]:
            space_obj.setdefault("status", {}).update(phase="Ready",
                                                      url=f"{self.public_url}/clusters/{full_path(space)}")
            return space_obj

        updated = await self.objects.guaranteed_update(parent, space_type, "", name, ready,
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

    async def delete_child_spaces(self, space: str, rows: list[LogRow]) -> None:
        """Start deleting the Spaces stored in ``space`` (its children) that are not being deleted yet."""
        space_type = self.catalog.by_group_resource(space, SPACES)
        assert space_type is not None  # Space rows are stored only where Spaces are served
        for row in rows:
            if decode_object(row)["metadata"].get("deletionTimestamp"):
                continue
            try:
                await self.objects.delete(space, space_type, "", row.key.name, DeleteOptions(propagation="Background"))
            except StatusError as exc:
                if exc.code != 404:
                    raise

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
        _rev, rows = await self.lc.objects.run_sync(self.lc.objects.store.list, space, None, None)
        children = [row for row in rows if row.key.resource == SPACES]
        contents = [row for row in rows if row.key.resource != SPACES]
        if children:
            await self.lc.delete_child_spaces(space, children)
        if contents:
            # A space is removed whole: its objects' finalizers belong to controllers of that space,
            # which go away with it, so everything but its child Spaces is purged unconditionally.
            await self.lc.objects.purge(space, contents)
            return True
        if children:
            # Bottom-up: each child goes the same way first; the removal of the last one (on_commit) brings
            # this space back here, so there is nothing to poll for.
            return False
        parent = parent_id(space)
        assert parent is not None  # root cannot be deleted (SpaceStrategy.validate_delete)
        await self.lc.finalize(Key(parent, SPACES, "", base_name(space)))
        return False


