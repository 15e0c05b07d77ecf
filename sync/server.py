"""``SyncServer``: the hub's end of every syncer connection, wired to placement, the inventory and status.

Owns the hub process's epoch (a random name telling syncers whether their seq came from this process),
the stream source and this process's pod tunnels (``tunnel``); hands heartbeats to the inventory's health
records and reports, Events and upsynced objects to the status service. Knows nothing of HTTP (``routes``
does).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any

from apiserver.catalog import Catalog
from inventory.clusters import Inventory
from inventory.health import Heartbeats
from placement.service import PlacementService
from status.service import ClusterEvent, ObjectReport, StatusService
from status.upsync import UpsyncItem
from sync.direct import DirectSink
from sync.messages import EntryTypes
from sync.stream import StreamSource
from sync.tunnel import TunnelRegistry


class SyncServer:
    def __init__(self, service: PlacementService, inventory: Inventory, heartbeats: Heartbeats,
                 status: StatusService, catalog: Catalog, *, ping_interval: float) -> None:
        self.service = service
        self.inventory = inventory
        self.heartbeats = heartbeats
        self.status = status
        self.epoch = secrets.token_hex(8)
        self.streams = StreamSource(service, inventory, EntryTypes(catalog), self.epoch, ping_interval)
        self.tunnels = TunnelRegistry(ping_interval)
        inventory.listeners.append(self.tunnels)

    def target_exists(self, name: str) -> bool:
        return self.inventory.sync_target(name) is not None

    def stream(self, target: str, since: int, epoch: str | None,
               sink: DirectSink | None = None) -> AsyncIterator[bytes]:
        return self.streams.stream(target, since, epoch, sink)

    async def heartbeat(self, target: str, capacity: dict[str, Any] | None, allocatable: dict[str, Any] | None,
                        syncer_version: str, unreachable: str | None = None) -> dict[str, Any]:
        when = await self.heartbeats.record(target, capacity, allocatable, syncer_version, unreachable)
        return {"syncTarget": target, "lastSyncerHeartbeatTime": when,
                "heartbeatTimeoutSeconds": self.heartbeats.timeout}

    async def report(self, target: str, items: Sequence[ObjectReport]) -> dict[str, Any]:
        return await self.status.report(target, items)

    async def events(self, target: str, items: Sequence[ClusterEvent]) -> dict[str, Any]:
        return await self.status.cluster_events(target, items)

    async def upsync(self, target: str, items: Sequence[UpsyncItem],
                     complete: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
        return await self.status.upsynced(target, items, complete)
