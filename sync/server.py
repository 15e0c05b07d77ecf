"""``SyncServer``: the hub's end of every syncer connection, wired to placement and the inventory.

Owns the hub process's epoch (a random name telling syncers whether their seq came from this process),
the stream source, the reported-state store and singleton status, and hands heartbeats to the
inventory's health records. Knows nothing of HTTP (``routes`` does).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from inventory.clusters import Inventory
from inventory.health import Heartbeats
from placement.model import ObjectRef
from placement.service import PlacementService
from spaces.catalog import Catalog
from spaces.service import Objects, now_rfc3339
from sync.messages import EntryTypes
from sync.reports import Report, ReportStore
from sync.singleton import SingletonStatus
from sync.stream import StreamSource


@dataclass(frozen=True)
class ObjectReport:
    """One entry of a status POST, already validated."""

    ref: ObjectRef
    status: dict[str, Any] | None
    error: str | None
    generation: int | None
    drift_corrections: int = 0  # how often the syncer has put the object back after a change in the cluster
    last_drift_correction: str | None = None


class SyncServer:
    def __init__(self, service: PlacementService, inventory: Inventory, heartbeats: Heartbeats, objects: Objects,
                 catalog: Catalog, *, ping_interval: float) -> None:
        self.service = service
        self.inventory = inventory
        self.heartbeats = heartbeats
        self.epoch = secrets.token_hex(8)
        self.reports = ReportStore()
        self.streams = StreamSource(service, inventory, EntryTypes(catalog), self.epoch, ping_interval)
        self.singleton = SingletonStatus(service, objects, catalog, self.reports)

    async def start(self) -> None:
        self.singleton.start()
        await self.singleton.load()

    async def stop(self) -> None:
        await self.singleton.stop()

    def target_exists(self, name: str) -> bool:
        return self.inventory.sync_target(name) is not None

    def stream(self, target: str, since: int, epoch: str | None) -> AsyncIterator[bytes]:
        return self.streams.stream(target, since, epoch)

    async def heartbeat(self, target: str, capacity: dict[str, Any] | None, allocatable: dict[str, Any] | None,
                        syncer_version: str) -> dict[str, Any]:
        when = await self.heartbeats.record(target, capacity, allocatable, syncer_version)
        return {"syncTarget": target, "lastSyncerHeartbeatTime": when,
                "heartbeatTimeoutSeconds": self.heartbeats.timeout}

    def report(self, target: str, items: Sequence[ObjectReport]) -> dict[str, Any]:
        """Keep each report on an object of the target's desired set; say which were ignored and why."""
        engine = self.service.engine
        now = now_rfc3339()
        accepted = 0
        ignored = []
        for index, item in enumerate(items):
            ref = item.ref
            if target not in engine.object_destinations(ref):
                what = f"{ref.resource} \"{ref.name}\"" + (f" in namespace {ref.namespace}" if ref.namespace else "")
                ignored.append({"index": index, "reason": "NotDesired",
                                "message": f"{what} of space {ref.space} is not in the desired set of {target}"})
                continue
            self.reports.put(ref, target, Report(item.status, item.error, item.generation, now, item.drift_corrections,
                                                item.last_drift_correction))
            self.singleton.on_report(ref)
            accepted += 1
        return {"accepted": accepted, "ignored": ignored}
