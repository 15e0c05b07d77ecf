"""Registering and removing clusters: SyncTarget + Location + the syncer's credential, and its bootstrap.

``register`` creates SyncTarget and Location NAME in the inventory space (the Location selects the
SyncTarget by its ``id`` label) and mints a syncer credential; the bootstrap it returns is everything a
syncer needs to dial the hub (URL, CA, credential). ``delete`` undoes all three.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.writeoptions import DeleteOptions, WriteOptions, now_rfc3339
from inventory.credentials import SyncerCredentials
from inventory.kinds import CREDENTIALS_ROTATED, EDGE_GROUP, EDGE_VERSION, LOCATIONS, SYNC_TARGETS
from inventory.taints import merge_taints

MANAGER = "spacehub-register"


class Registration:
    def __init__(self, objects: Objects, catalog: Catalog, credentials: SyncerCredentials, inventory_space: str,
                 public_url: str, ca_pem: bytes | None) -> None:
        self.objects = objects
        self.catalog = catalog
        self.credentials = credentials
        self.space = inventory_space
        self.public_url = public_url
        self.ca_pem = ca_pem

    def _type(self, resource: str) -> ResourceType:
        rtype = self.catalog.by_group_resource(self.space, resource)
        assert rtype is not None, resource
        return rtype

    async def register(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        """Create the cluster's SyncTarget, Location and credential; ``{"name", "bootstrap"}``."""
        target = {"apiVersion": f"{EDGE_GROUP}/{EDGE_VERSION}", "kind": "SyncTarget",
                  "metadata": {"name": name, "labels": {**labels, "id": name}}}
        location = {"apiVersion": f"{EDGE_GROUP}/{EDGE_VERSION}", "kind": "Location",
                    "metadata": {"name": name, "labels": dict(labels)},
                    "spec": {"resource": {"group": EDGE_GROUP, "version": EDGE_VERSION, "resource": "synctargets"},
                             "instanceSelector": {"matchLabels": {"id": name}}}}
        await self.objects.create(self.space, self._type(SYNC_TARGETS), "", target,
                                  WriteOptions(manager=MANAGER, field_validation="Strict"))
        try:
            await self.objects.create(self.space, self._type(LOCATIONS), "", location,
                                      WriteOptions(manager=MANAGER, field_validation="Strict"))
        except StatusError:
            await self.objects.delete_if_present(self.space, self._type(SYNC_TARGETS), "", name)
            raise
        token = await self.objects.run_sync(self.credentials.mint, name, now_rfc3339())
        return {"name": name, "bootstrap": self._bootstrap(name, token)}

    async def rotate_credentials(self, name: str, grace_seconds: float) -> dict[str, Any]:
        """A new credential for cluster ``name`` (``{"name", "bootstrap"}``); its earlier ones stop working after
        ``grace_seconds``. StatusError 404 if the cluster is not registered."""
        await self.objects.get(self.space, self._type(SYNC_TARGETS), "", name)
        rotated = now_rfc3339()
        token = await self.objects.run_sync(self.credentials.rotate, name, rotated, grace_seconds)

        def annotate(obj: dict[str, Any]) -> dict[str, Any]:  # every hub process re-reads the old tokens' expiry
            obj["metadata"].setdefault("annotations", {})[CREDENTIALS_ROTATED] = rotated
            return obj

        await self.objects.guaranteed_update(self.space, self._type(SYNC_TARGETS), "", name, annotate,
                                             WriteOptions(manager=MANAGER))
        return {"name": name, "bootstrap": self._bootstrap(name, token)}

    def _bootstrap(self, name: str, token: str) -> dict[str, Any]:
        return {
            "apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap", "hub": self.public_url,
            "inventorySpace": self.space, "syncTarget": name, "token": token,
            "certificateAuthorityData": base64.b64encode(self.ca_pem).decode() if self.ca_pem else None,
        }

    async def delete(self, name: str) -> None:
        """Delete SyncTarget and Location ``name`` and revoke the credential; StatusError 404 if absent."""
        await self.objects.delete(self.space, self._type(SYNC_TARGETS), "", name, DeleteOptions())
        await self.objects.delete_if_present(self.space, self._type(LOCATIONS), "", name)
        await self.objects.run_sync(self.credentials.revoke, name)

    async def schedule(self, name: str, *, unschedulable: bool, drain: bool) -> dict[str, Any]:
        """Cordon (``spec.unschedulable``), drain (also ``spec.evictAfter``: now) or uncordon SyncTarget
        ``name``; returns it. StatusError 404 if absent."""
        def set_spec(obj: dict[str, Any]) -> dict[str, Any]:
            spec = dict(obj.get("spec") or {})
            spec["unschedulable"] = unschedulable
            if drain:
                spec.setdefault("evictAfter", now_rfc3339())
            elif not unschedulable:
                spec.pop("evictAfter", None)
            obj["spec"] = spec
            return obj

        return await self.objects.guaranteed_update(self.space, self._type(SYNC_TARGETS), "", name, set_spec,
                                                    WriteOptions(manager=MANAGER, field_validation="Strict"))

    async def taint(self, name: str, add: list[dict[str, Any]], remove: list[dict[str, Any]]) -> dict[str, Any]:
        """Put taints on SyncTarget ``name`` and take others off (``kubectl taint``'s merge,
        :func:`inventory.taints.merge_taints`); returns it. StatusError 404 if absent."""
        now = dt.datetime.now(dt.UTC)

        def set_taints(obj: dict[str, Any]) -> dict[str, Any]:
            spec = dict(obj.get("spec") or {})
            spec["taints"] = merge_taints(spec.get("taints"), add, remove, now)
            if not spec["taints"]:
                del spec["taints"]
            obj["spec"] = spec
            return obj

        return await self.objects.guaranteed_update(self.space, self._type(SYNC_TARGETS), "", name, set_taints,
                                                    WriteOptions(manager=MANAGER, field_validation="Strict"))
