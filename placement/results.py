"""What the placement engine resolved, written to the store: each EdgePlacement's SinglePlacementSlices and
status, and Locations' ``status.instances``.

The service (``placement.service``) decides when, and that only the lease holder writes; this module owns what is
written and how: slices of at most ``slice_size`` destinations owned by their placement, stale ones deleted; a
status written only when it differs, its conditions keeping their transition times.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions, now_rfc3339
from inventory.clusters import Inventory
from inventory.kinds import EDGE_GROUP, EDGE_VERSION, LOCATIONS
from placement.engine import PlacementEngine

PLACEMENTS = f"edgeplacements.{EDGE_GROUP}"
SLICES = f"singleplacementslices.{EDGE_GROUP}"
SOURCE_LABEL = "edge.kubestellar.io/source-placement"
SLICE_SIZE = 500  # destinations per SinglePlacementSlice before it is split
MANAGER = "spacehub-placement"

ConditionSource = Callable[[str, str], list[dict[str, Any]]]


class ResultWriter:
    def __init__(self, objects: Objects, catalog: Catalog, engine: PlacementEngine, inventory: Inventory,
                 placement: Callable[[str, str], dict[str, Any]], slice_size: int = SLICE_SIZE) -> None:
        """``placement``: the stored EdgePlacement of (space, name), as the service holds it."""
        self.objects = objects
        self.catalog = catalog
        self.engine = engine
        self.inventory = inventory
        self._placement = placement
        self.slice_size = slice_size
        self._slice_names: dict[tuple[str, str], list[str]] = {}
        # Conditions other parts add to an EdgePlacement's status (upsync clashes, copies), by (space, name).
        self.condition_sources: list[ConditionSource] = []
        # Fields other parts add to an EdgePlacement's status (the staged rollout's ``rollout``, the stored choice
        # ``scheduling``), by (space, name).
        self.status_sources: list[Callable[[str, str], dict[str, Any]]] = []

    def forget(self, space: str, name: str) -> None:
        """The placement is gone: its slices go with it, by owner reference."""
        self._slice_names.pop((space, name), None)

    async def location_statuses(self) -> None:
        """Location status.instances: how many SyncTargets its instanceSelector selects (written on change)."""
        inv = self.inventory.space
        changed: dict[str, int] = {}
        for location in self.inventory.locations():
            name = location["metadata"]["name"]
            instances = len(self.engine.location_instances(name))
            if (location.get("status") or {}).get("instances") != instances:
                changed[name] = instances
        # Written together: a fleet registering at once changes every Location, and one at a time each write
        # waited for a commit of its own (1,000 serial commits, seconds of writes, after 1,000 registrations).
        await asyncio.gather(*(self._set_status(inv, LOCATIONS, name, {"instances": instances}, merge=True)
                               for name, instances in changed.items()))

    async def _set_status(self, space: str, resource: str, name: str, status: dict[str, Any], *,
                          merge: bool = False) -> None:
        """Write ``status`` (``merge``: over the stored one's other fields) as the engine; an object gone is fine."""

        def set_status(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = {**(obj.get("status") or {}), **status} if merge else status
            return obj

        try:
            await self.objects.guaranteed_update(space, self._type(space, resource), "", name, set_status,
                                                 WriteOptions(manager=MANAGER), subresource="status")
        except StatusError as exc:
            if exc.code != 404:
                raise

    def _type(self, space: str, resource: str) -> ResourceType:
        rtype = self.catalog.by_group_resource(space, resource)
        assert rtype is not None, resource
        return rtype

    async def slices(self, space: str, name: str) -> None:
        placement = self._placement(space, name)
        destinations = [{"cluster": self.inventory.space, "locationName": d.location_name,
                         "syncTargetName": d.sync_target_name, "syncTargetUID": d.sync_target_uid}
                        for d in self.engine.destinations(space, name)]
        size = self.slice_size
        chunks = [destinations[i:i + size] for i in range(0, len(destinations), size)] or [[]]
        sps = self._type(space, SLICES)
        owner = {"apiVersion": f"{EDGE_GROUP}/{EDGE_VERSION}", "kind": "EdgePlacement", "name": name,
                 "uid": placement["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        wanted_names = [name if i == 0 else f"{name}-{i + 1}" for i in range(len(chunks))]
        for slice_name, chunk in zip(wanted_names, chunks, strict=True):
            body = {"apiVersion": sps.api_version, "kind": "SinglePlacementSlice",
                    "metadata": {"name": slice_name, "labels": {SOURCE_LABEL: name}, "ownerReferences": [owner]},
                    "destinations": chunk}
            await self._put(space, sps, slice_name, body)
        known = self._slice_names.get((space, name))
        if known is None:  # first time since startup: look at what is stored
            result = await self.objects.list(space, sps, None)
            known = [i["metadata"]["name"] for i in result.items
                     if (i["metadata"].get("labels") or {}).get(SOURCE_LABEL) == name]
        for stale in set(known) - set(wanted_names):
            await self.objects.delete_if_present(space, sps, "", stale)
        self._slice_names[(space, name)] = wanted_names

    async def _put(self, space: str, rtype: ResourceType, name: str, body: dict[str, Any]) -> None:
        opts = WriteOptions(manager=MANAGER, field_validation="Strict")
        current = await self.objects.find(space, rtype, "", name)
        if current is None:
            await self.objects.create(space, rtype, "", body, opts)
            return
        if current.get("destinations") == body["destinations"] and \
                current["metadata"].get("ownerReferences") == body["metadata"]["ownerReferences"]:
            return

        def replace(obj: dict[str, Any]) -> dict[str, Any]:
            obj["destinations"] = body["destinations"]
            obj["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), **body["metadata"]["labels"]}
            obj["metadata"]["ownerReferences"] = body["metadata"]["ownerReferences"]
            return obj

        await self.objects.guaranteed_update(space, rtype, "", name, replace, opts)

    async def status(self, space: str, name: str) -> None:
        placement = self._placement(space, name)
        destinations = self.engine.destinations(space, name)
        selected = self.engine.selected_objects(space, name)
        missing = self.engine.missing_crds(space, name)
        unserved = self.engine.unserved_resources(space, name)
        locations = self.engine.matching_location_count(space, name)
        if not locations:
            matched = ("False", "NoLocation", "no Location matches the locationSelectors")
        elif not destinations:
            matched = ("False", "NoSyncTarget", "the matching Locations select no SyncTarget")
        elif not selected:
            matched = ("False", "NoObject", "no object in this space matches the downsync tests")
        else:
            matched = ("True", "Matched", f"{len(selected)} objects to {len(destinations)} destinations")
        old_status = placement.get("status") or {}
        old_condition = next((c for c in old_status.get("conditions") or [] if c.get("type") == "Matched"), {})
        since = old_condition.get("lastTransitionTime") if old_condition.get("status") == matched[0] else None
        conditions = [{"type": "Matched", "status": matched[0], "reason": matched[1], "message": matched[2],
                       "lastTransitionTime": since or now_rfc3339()}]
        if missing:
            conditions.append({"type": "CRDsMissing", "status": "True", "reason": "CRDNotSelected",
                               "message": "selected custom resources whose CRD is not selected: " + ", ".join(missing),
                               "lastTransitionTime": now_rfc3339()})
        if unserved:
            conditions.append({"type": "ResourcesUnserved", "status": "True", "reason": "NotServed",
                               "message": "the downsync tests name resources this space does not serve (no "
                                          "object of them can be selected; create their CRD here, or correct "
                                          "the names): " + ", ".join(unserved),
                               "lastTransitionTime": now_rfc3339()})
        for source in self.condition_sources:
            conditions.extend(dict(c, lastTransitionTime=now_rfc3339()) for c in source(space, name))
        status = {"specGeneration": placement["metadata"].get("generation", 1), "matchingLocationCount": locations,
                  "destinationCount": len(destinations), "selectedObjectCount": len(selected),
                  "missingCRDs": missing, "unservedResources": unserved, "conditions": conditions}
        for status_source in self.status_sources:
            status.update(status_source(space, name))
        comparable = {k: v for k, v in old_status.items() if k != "conditions"}
        if comparable == {k: v for k, v in status.items() if k != "conditions"} and \
                [(c["type"], c["status"], c.get("message")) for c in old_status.get("conditions") or []] == \
                [(c["type"], c["status"], c.get("message")) for c in conditions]:
            return

        await self._set_status(space, PLACEMENTS, name, status)

