"""What the REST API, the sync server and status read of placement (``placement.api.PlacementView``), answered from
the service's records (``placement.service``, which this class is a part of)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from apiserver.catalog import Catalog
from apiserver.controllers.serviceaccounts import namespace_default
from apiserver.resourcetypes import ScalePaths
from apiserver.service import Objects
from apiserver.spacepaths import ROOT
from apiserver.store import Key, LogRow
from placement.conflicts import Conflict
from placement.copies import ClusterCopies
from placement.engine import PlacementEngine
from placement.model import ObjectRef, WorkloadObject
from placement.placed import for_child_hubs, is_workload, labels_of
from placement.projection import ProjectedObjects
from placement.recording import SpaceRecording
from placement.results import PLACEMENTS
from placement.rollout_runner import RolloutRunner
from placement.shaping import Outcome


class PlacementReads:
    """The service's answers about placements, objects and their copies (the state is the service's)."""

    objects: Objects
    catalog: Catalog
    engine: PlacementEngine
    copies: ClusterCopies
    rollouts: RolloutRunner
    recording: SpaceRecording
    projections: ProjectedObjects
    inventory_space: str
    not_placed: frozenset[str]
    space_phase: Callable[[str], str | None]
    external: dict[str, Callable[[Key], LogRow | None]]
    _placements: dict[str, dict[str, dict[str, Any]]]
    _workload: dict[ObjectRef, WorkloadObject]
    _target_waiters: dict[str, asyncio.Event]

    def is_workload_space(self, space: str) -> bool:
        return space not in (ROOT, self.inventory_space)

    def _placed_kind(self, row: LogRow) -> bool:
        return row.key.resource not in self.not_placed and not namespace_default(row.key.resource, row.key.name)

    # --- per-cluster copies ----------------------------------------------------------------------

    async def content_for(self, ref: ObjectRef, target: str) -> Outcome | None:
        return await self.copies.content_for(ref, target)

    async def shared_copy(self, ref: ObjectRef) -> tuple[Outcome | None, frozenset[str]] | None:
        return await self.copies.shared_copy(ref)

    def copy_error(self, ref: ObjectRef, target: str) -> str | None:
        return self.copies.copy_error(ref, target)

    def shares(self, ref: ObjectRef) -> dict[str, int] | None:
        return self.copies.shares(ref)

    def conflicts(self) -> list[Conflict]:
        return self.copies.conflicts.all()

    def target_changed(self, target: str) -> asyncio.Event:
        """An event set at the next bump of ``target_versions[target]``; take it before reading the engine,
        so that a change between the read and the wait is never missed."""
        return self._target_waiters.setdefault(target, asyncio.Event())

    # --- PlacementView ---------------------------------------------------------------------------

    def placement(self, space: str, name: str) -> dict[str, Any] | None:
        """An EdgePlacement object as stored (None: no such placement)."""
        return self._placements.get(space, {}).get(name)

    def placement_keys(self) -> list[tuple[str, str]]:
        """Every EdgePlacement the engine knows, as (space, name)."""
        return sorted((space, name) for space, items in self._placements.items() for name in items)

    def placements(self, space: str) -> list[dict[str, Any]] | None:
        if self.space_phase(space) is None:
            return None
        items = self._placements.get(space, {})
        return [items[n] for n in sorted(items)]

    def object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        w = self._workload.get(ref)
        if w is None:
            return None
        return {"kind": w.kind, "apiVersion": w.api_version, "labels": dict(w.labels),
                "resourceVersion": str(w.revision)}

    async def find_object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        if ref.space in self.external or self.recording.recorded(ref.space) or not self.is_workload_space(ref.space):
            return self.object_info(ref)
        row = await self.objects.find_row(Key(ref.space, ref.resource, ref.namespace, ref.name))
        if row is None or row.deleted:
            return None
        obj = orjson.loads(row.value)
        if row.key.resource == PLACEMENTS:  # one for child hubs is an object to place
            placed = for_child_hubs(obj) and not (obj.get("metadata") or {}).get("deletionTimestamp")
        else:
            placed = self._placed_kind(row) and is_workload(obj)
        if not placed:
            return None
        # The row's revision: a recorded object shows the revision of its content's latest change, which only a
        # record kept since then knows (here a later change to its status alone shows too).
        return {"kind": obj.get("kind", ""), "apiVersion": obj.get("apiVersion", ""), "labels": dict(labels_of(obj)),
                "resourceVersion": str(row.revision)}

    def object_revision(self, ref: ObjectRef) -> str | None:
        """The revision of the object's content in its space (status-only revisions do not count)."""
        w = self._workload.get(ref)
        return None if w is None else str(w.revision)

    def content_revision(self, ref: ObjectRef, target: str) -> str | None:
        """The revision of ``target``'s copy of the object (status-only revisions do not count)."""
        return self.copies.revision(ref, target)

    def rollout_revision(self, ref: ObjectRef, target: str) -> int | None:
        """The revision number of ``target``'s copy: the kept revision a rollout pins it to, else the newest."""
        pinned = self.rollouts.pin(ref, target)
        newest = self.rollouts.history.newest(ref)
        return pinned.number if pinned is not None else (newest.number if newest is not None else None)

    def _scale(self, ref: ObjectRef) -> ScalePaths | None:
        """Where a kind with a scale subresource keeps its replicas (None: it has none to divide)."""
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None or "scale" not in rtype.subresources:
            return None
        return rtype.scale or ScalePaths()  # built-in kinds keep the default paths

    def _revision(self, ref: ObjectRef) -> int | None:
        w = self._workload.get(ref)
        return None if w is None else w.revision

    async def projected(self, ref: ObjectRef) -> dict[str, Any] | None:
        """The object as its destinations must have it (cached per revision)."""
        return await self.projections.get(ref)

    async def _stored_object(self, ref: ObjectRef) -> dict[str, Any] | None:
        key = Key(ref.space, ref.resource, ref.namespace, ref.name)
        read = self.external.get(ref.space)
        row = read(key) if read is not None else await self.objects.find_row(key)
        return None if row is None else orjson.loads(row.value)

