"""Spaces: the phase index, what a new space gets, and clean-up on deletion.

* Every request must know whether its space exists: the index is kept current from the watch bus (loaded
  from the store at startup).
* Every new space gets its default objects (``spaces.seeding``) before its creation is acknowledged; a new
  Space is refused in a terminating space, or deeper or longer than ``apiserver.spacepaths`` allows.
* Deleting a Space removes a whole space and, bottom-up, the spaces below it: its child Spaces are deleted
  at once (each Terminating, doing the same below it), its other contents purged, and its own Space object
  removed after the last child is gone. Finalizers on objects inside a space do not hold it; a finalizer on
  a Space object holds that Space (emptied, Terminating) and so each space above it, until someone removes
  the finalizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from apimachinery import errors
from apimachinery.errors import Cause, StatusError
from apiserver.catalog import Catalog
from apiserver.controllers.namespaces import NamespaceController, finalize, phase_of
from apiserver.service import Objects
from apiserver.spacepaths import ROOT, base_name, child_causes, child_id, full_path, parent_id
from apiserver.store import Key, LogRow
from apiserver.watch import Entry, decode_object
from apiserver.writeoptions import DeleteOptions, WriteOptions
from kubeclient.workqueue import Gate, WorkQueue
from spaces.kind import KUBE, SPACE_GROUP, SPACES, provider_of
from spaces.seeding import SpaceSeeder


class SpaceController:
    def __init__(self, objects: Objects, catalog: Catalog, namespaces: NamespaceController,
                 public_url: str = "") -> None:
        self.objects = objects
        self.catalog = catalog
        self.public_url = public_url
        self.phases: dict[str, str] = {ROOT: "Active"}
        # Spaces served by a Kubernetes API server (``spaces.providers``): the hub stores none of their objects,
        # so they get no default namespace (nor roles) here.
        self.kube_spaces: set[str] = set()
        self.seeder = SpaceSeeder(objects, catalog, namespaces)
        self.worker = _SpaceWorker(self)

    def load(self) -> None:
        """Read current spaces from the store (blocking; call at startup)."""
        for row in self.objects.rows_of_resource(SPACES):
            obj = orjson.loads(row.value)
            self.phases[child_id(row.key.space, row.key.name)] = phase_of(obj)
            if provider_of(obj) == KUBE:
                self.kube_spaces.add(child_id(row.key.space, row.key.name))

    def phase(self, space: str) -> str | None:
        """The phase of a space by its id (``apiserver.spacepaths``); None when there is no such space."""
        return self.phases.get(space)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if key.resource != SPACES:
                continue
            space = child_id(key.space, key.name)
            # A child gone may be the last one a terminating parent waits for; one created in a terminating
            # parent (by a racing hub process) is for that parent to delete.
            if self.phases.get(key.space) == "Terminating":
                self.worker.add(key.space)
            if entry.row.deleted:
                self.phases.pop(space, None)
                self.kube_spaces.discard(space)
                continue
            phase = phase_of(entry.obj())
            self.phases[space] = phase
            if provider_of(entry.obj()) == KUBE:
                self.kube_spaces.add(space)
            if phase == "Terminating":
                self.worker.add(space)

    def start(self, gate: Gate | None = None) -> None:
        self.objects.bus.add_listener(self.on_commit)
        self.objects.before_create.setdefault(SPACES, []).append(self._check_new_space)
        self.objects.after_create.setdefault(SPACES, []).append(self._space_created)
        self.worker.start(gate)
        for space, phase in list(self.phases.items()):
            if phase == "Terminating":
                self.worker.add(space)

    async def stop(self) -> None:
        await self.worker.stop()

    def _check_new_space(self, parent: str, obj: dict[str, Any]) -> None:
        """Refuse a Space in a terminating space (kube's answer for a terminating namespace), and one whose
        path would be deeper or longer than ``apiserver.spacepaths`` allows (422, naming ``metadata.name``)."""
        name = str(obj["metadata"]["name"])
        if self.phase(parent) == "Terminating":
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
        self.phases.setdefault(space, "Active")
        if provider_of(obj) == KUBE:
            self.kube_spaces.add(space)
        else:
            await self.seeder.seed(space)
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

    async def delete_child_spaces(self, space: str, rows: list[LogRow]) -> None:
        """Start deleting the Spaces stored in ``space`` (its children) that are not being deleted yet."""
        space_type = self.catalog.by_group_resource(space, SPACES)
        assert space_type is not None  # Space rows are stored only where Spaces are served
        for row in rows:
            if decode_object(row)["metadata"].get("deletionTimestamp"):
                continue
            await self.objects.delete_if_present(space, space_type, "", row.key.name,
                                                 DeleteOptions(propagation="Background"))


class _SpaceWorker(WorkQueue):
    def __init__(self, spaces: SpaceController) -> None:
        super().__init__("spaces")
        self.spaces = spaces

    async def handle(self, key: Any) -> bool:
        space = key
        if self.spaces.phase(space) != "Terminating":
            return False
        objects = self.spaces.objects
        rows = await objects.run_sync(objects.rows_in, space)
        children = [row for row in rows if row.key.resource == SPACES]
        contents = [row for row in rows if row.key.resource != SPACES]
        if children:
            await self.spaces.delete_child_spaces(space, children)
        if contents:
            # A space is removed whole: its objects' finalizers belong to controllers of that space,
            # which go away with it, so everything but its child Spaces is purged unconditionally.
            await objects.purge(space, contents)
            return True
        if children:
            # Bottom-up: each child goes the same way first; the removal of the last one (on_commit) brings
            # this space back here, so there is nothing to poll for.
            return False
        parent = parent_id(space)
        assert parent is not None  # root cannot be deleted (SpaceStrategy.validate_delete)
        await finalize(objects, Key(parent, SPACES, "", base_name(space)))
        return False
