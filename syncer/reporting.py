"""What goes back to the hub: coalesced status reports and heartbeats.

Status reports are coalesced per object (only the latest state counts, and only a change is sent) and
sent in batches at most every ``interval`` seconds while the stream is connected; a failed batch stays
pending. Heartbeats carry the cluster's capacity (summed over its Nodes; for a child hub's space, which
serves none, over that hub's clusters) every quarter of the hub's heartbeat timeout, and whether the cluster
answers the syncer (``Cluster.reach``), sent at once when that changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from apimachinery.quantity import parse_quantity
from kubeclient.backoff import Backoff
from kubeclient.client import ClusterError
from syncer.cluster import Cluster
from syncer.held import Held, space_names
from syncer.hubclient import HubClient, HubError

log = logging.getLogger(__name__)
MAX_BATCH = 5_000  # objects per POST (the hub takes up to 10,000)
RETRY_MAX_SECONDS = 30.0  # the longest wait before resending a failed status report
DEFAULT_HEARTBEAT_INTERVAL = 15.0


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusReporter:
    def __init__(self, hub: HubClient, interval: float, target: str) -> None:
        self.hub = hub
        self.interval = interval
        self.target = target
        # What a workload owns in the cluster (``associated``), by held ident; None for other kinds.
        self.associated: Callable[[str], dict[str, Any] | None] = lambda _ident: None
        self.pending: dict[str, list[dict[str, Any]]] = {}  # ident -> one report per source space
        self.wake = asyncio.Event()
        self.connected = asyncio.Event()

    def offer(self, held: Held, live: dict[str, Any] | None) -> None:
        """Queue ``held``'s state unless it equals what was last reported."""
        meta = (live or {}).get("metadata") or {}
        if live is not None:
            held.live_status, held.live_generation = live.get("status"), meta.get("generation")
        status, generation = held.live_status, held.live_generation
        associated = self.associated(held.ident)
        drift = [dict(entry) for entry in held.drift]
        state = (generation, status, held.error, held.corrections, held.revision, associated, drift, held.retained)
        if state == held.reported:
            return
        held.reported = state
        items = []
        for base in report_bases(held):
            item: dict[str, Any] = {**base, "generation": generation, "status": status, "error": held.error}
            if held.revision is not None:
                item["appliedRevision"] = held.revision
            if associated is not None:
                item["associated"] = associated
            if held.corrections:
                item["driftCorrections"] = held.corrections
                item["lastDriftCorrection"] = held.last_correction
            if drift:
                item["drift"] = drift
            if held.retained:
                item["retained"] = held.retained
            items.append(item)
        self.pending[held.ident] = items
        self.wake.set()

    def forget(self, ident: str) -> None:
        self.pending.pop(ident, None)

    async def run(self) -> None:
        backoff = Backoff(max(self.interval, 0.5), RETRY_MAX_SECONDS)
        while True:
            await self.wake.wait()
            await self.connected.wait()
            self.wake.clear()
            batch_idents = list(self.pending)[:MAX_BATCH // 2]
            batch = {ident: self.pending.pop(ident) for ident in batch_idents}
            objects = [item for items in batch.values() for item in items]
            delay = self.interval
            if objects:
                try:
                    await self.hub.report(objects)
                    backoff.reset()
                except HubError as exc:
                    # Resent after a backoff, whatever the stream does: a report can fail while the stream
                    # stays up, and then no SYNCED comes to say the hub is back. (A stream that breaks
                    # clears ``connected`` itself, and its next SYNCED re-offers everything.)
                    delay = backoff.next()
                    log.warning("syncer %s: status report failed (%s), resent in %.1fs: %s", self.target,
                                exc.reason, delay, exc.message)
                    for ident, items in batch.items():
                        self.pending.setdefault(ident, items)
            if self.pending:
                self.wake.set()
            await asyncio.sleep(delay)


def report_bases(held: Held) -> list[dict[str, Any]]:
    """How the hub names a held object, once per space it came from (the identity of reports and Events)."""
    return [{"space": space, "group": held.entry.get("group") or "", "resource": held.entry["resource"],
             "namespace": namespace, "name": name}
            for space, namespace, name in map(space_names, sorted(held.sources))]


def node_capacity(nodes: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``capacity`` and ``allocatable`` summed over the Ready and unready Nodes alike (what the cluster has)."""
    sums: dict[str, dict[str, Decimal]] = {"capacity": {}, "allocatable": {}}
    for node in nodes:
        for field, total in sums.items():
            for resource, quantity in ((node.get("status") or {}).get(field) or {}).items():
                value = parse_quantity(quantity)
                if value is not None:
                    total[resource] = total.get(resource, Decimal(0)) + value
    return {field: {resource: _quantity(value) for resource, value in total.items()}
            for field, total in sums.items() if total}


def _quantity(value: Decimal) -> str:
    """Whole numbers as they are, fractions in milli-units (cpu: "7500m")."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int((value * 1000).to_integral_value())}m"


async def cluster_capacity(cluster: Cluster) -> dict[str, dict[str, str]]:
    """The cluster's capacity from its Nodes. A child hub's space (README "Hubs of hubs") serves no Nodes (404,
    or 403 first for a user whom RBAC does not let list them): its capacity is then that of the hub's clusters,
    summed from their SyncTargets as their own syncers report it."""
    try:
        return node_capacity(await cluster.nodes())
    except ClusterError as exc:
        if exc.code not in (403, 404):
            raise
        clusters = await cluster.hub_clusters()
        if clusters is None:
            raise
    return node_capacity([{"status": {"capacity": c.get("capacity"), "allocatable": c.get("allocatable")}}
                          for c in clusters])


CAPACITY_EVERY = 4  # heartbeats per reading of the cluster's Nodes (capacity changes slowly)
CAPACITY_WAIT = 2.0  # seconds a heartbeat waits for a reading of the Nodes; later ones carry it if slower


class Heartbeater:
    def __init__(self, hub: HubClient, cluster: Cluster, version: str, target: str) -> None:
        self.hub = hub
        self.cluster = cluster
        self.version = version
        self.target = target
        self.interval = DEFAULT_HEARTBEAT_INTERVAL
        self.capacity: dict[str, dict[str, str]] = {}
        self.count = 0
        self._reading: asyncio.Task[None] | None = None
        # A change in whether the cluster answers is sent at once, not at the next beat: the hub (and a placement
        # failing over from the cluster) should know in a moment, not in a quarter of the heartbeat timeout.
        self.wake = asyncio.Event()
        cluster.reach.listeners.append(self.wake.set)

    async def beat(self) -> None:
        if self.count % CAPACITY_EVERY == 0 and (self._reading is None or self._reading.done()):
            self._reading = asyncio.create_task(self._read_capacity())
        elif not self.cluster.reach.watching and \
                asyncio.get_running_loop().time() - self.cluster.reach.answered_at > self.interval:
            # Nothing asked of the cluster lately and no watch open: is it there? (A probe after the client's
            # idle connection expired costs a TLS handshake on both ends, so not while a watch stands for it.)
            await self.cluster.probe()
        if self._reading is not None and not self._reading.done():
            # A slow cluster API must not hold the heartbeat back: the hub would count the syncer gone.
            await asyncio.wait({self._reading}, timeout=CAPACITY_WAIT)
        self.count += 1
        self.wake.clear()  # what changed so far goes with this beat
        body: dict[str, Any] = {"syncerVersion": self.version, **self.capacity}
        reach = self.cluster.reach
        if reach.reachable is not None:
            body["cluster"] = {"reachable": reach.reachable, "message": reach.message}
        answer = await self.hub.heartbeat(body)
        timeout = answer.get("heartbeatTimeoutSeconds")
        if isinstance(timeout, int | float) and timeout > 0:
            self.interval = max(0.5, float(timeout) / 4)

    async def _read_capacity(self) -> None:
        try:
            self.capacity = await cluster_capacity(self.cluster)
        except ClusterError as exc:
            log.info("syncer %s: cannot read the cluster's nodes (or a hub's clusters) for its capacity: %s",
                     self.target, exc.message)

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self.beat()
                except HubError as exc:
                    log.warning("syncer %s: heartbeat failed (%s): %s", self.target, exc.reason, exc.message)
                # Jitter keeps a fleet's heartbeats from arriving at the hub in bursts.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval * random.uniform(0.8, 1.0)):
                        await self.wake.wait()
        finally:
            if self._reading is not None:
                self._reading.cancel()
