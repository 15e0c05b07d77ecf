"""Cluster health: syncer heartbeats, SyncTarget ``status.lastSyncerHeartbeatTime``, capacity and ``Ready``.

A heartbeat sets ``Ready=True`` (reason ``SyncerHeartbeat``), or ``Ready=False`` (reason
``ClusterUnreachable``) when the syncer says its cluster does not answer it — the syncer is there, the cluster is
not, and a placement failing over from lost clusters should count it lost; a periodic check sets ``Ready=False``
(reason ``HeartbeatTimeout``) on targets whose last heartbeat is older than the timeout. A heartbeat that would
change nothing but the time is written only once the stored time is half the timeout old. All write
only the SyncTarget's status subresource: nothing is deleted and placement never changes (status
changes do not reach the placement engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions, now_rfc3339
from inventory.clusters import Inventory
from inventory.kinds import SYNC_TARGETS
from kubeclient.workqueue import Gate

log = logging.getLogger(__name__)

MANAGER = "spacehub-syncer"
READY = "Ready"
HEARTBEAT_TIMEOUT = "HeartbeatTimeout"
CLUSTER_UNREACHABLE = "ClusterUnreachable"


def _parse_time(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ready_condition(status: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == READY), None)


def _set_ready(status: dict[str, Any], value: str, reason: str, message: str, now: str) -> None:
    """Set the Ready condition, keeping lastTransitionTime unless the condition's status changes."""
    old = ready_condition(status)
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == value else None
    condition = {"type": READY, "status": value, "reason": reason, "message": message,
                 "lastTransitionTime": since or now}
    others = [c for c in status.get("conditions") or [] if not (isinstance(c, dict) and c.get("type") == READY)]
    status["conditions"] = [*others, condition]


class Heartbeats:
    def __init__(self, inventory: Inventory, objects: Objects, catalog: Catalog, timeout: float) -> None:
        self.inventory = inventory
        self.objects = objects
        self.catalog = catalog
        self.timeout = timeout
        # When this process last recorded each target's heartbeat (monotonic): exact, where the stored
        # time has whole seconds only. Heartbeats recorded by another hub replica are known by the stored time.
        self._seen: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def check_interval(self) -> float:
        return max(0.2, min(self.timeout / 4, 5.0))

    async def record(self, target: str, capacity: dict[str, Any] | None, allocatable: dict[str, Any] | None,
                     syncer_version: str, unreachable: str | None = None) -> str:
        """Write one heartbeat (``unreachable``: why the syncer cannot reach its cluster); returns its time as
        stored."""
        now = now_rfc3339()
        syncer = f"syncer {syncer_version}" if syncer_version else "the syncer"
        if unreachable is None:
            ready, reason, message = "True", "SyncerHeartbeat", f"{syncer} is sending heartbeats"
        else:
            ready, reason, message = "False", CLUSTER_UNREACHABLE, f"{syncer} cannot reach its cluster: {unreachable}"

        stored = self._unchanged(target, capacity, allocatable, (ready, reason, message))
        if stored is not None:
            self._seen[target] = asyncio.get_running_loop().time()
            return stored

        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            status = obj.setdefault("status", {})
            status["lastSyncerHeartbeatTime"] = now
            if capacity is not None:
                status["capacity"] = capacity
            if allocatable is not None:
                status["allocatable"] = allocatable
            _set_ready(status, ready, reason, message, now)
            return obj

        await self._update(target, compute)
        self._seen[target] = asyncio.get_running_loop().time()
        return now

    def _unchanged(self, target: str, capacity: dict[str, Any] | None, allocatable: dict[str, Any] | None,
                   ready: tuple[str, str, str]) -> str | None:
        """The stored heartbeat time when this heartbeat would change nothing but that time and the stored one is
        recent enough (younger than half the timeout, less a second for its whole seconds): then it is not written.
        Every syncer beats every quarter of the timeout, so at a thousand clusters writing each beat was most of an
        idle hub's work; this process knows each beat exactly anyway (``_seen``), and other hub processes judge
        by a stored time never older than three quarters of the timeout."""
        status = (self.inventory.sync_target(target) or {}).get("status") or {}
        stored = status.get("lastSyncerHeartbeatTime")
        when = _parse_time(stored)
        if when is None or datetime.now(UTC).timestamp() - when > self.timeout / 2 - 1.0:
            return None
        if (capacity is not None and status.get("capacity") != capacity) or \
                (allocatable is not None and status.get("allocatable") != allocatable):
            return None
        condition = ready_condition(status) or {}
        if (condition.get("status"), condition.get("reason"), condition.get("message")) != ready:
            return None
        return str(stored)

    def _age(self, target: str, status: dict[str, Any]) -> float | None:
        """A lower bound of the age of the target's last heartbeat in seconds (None: it never sent one)."""
        ages = []
        seen = self._seen.get(target)
        if seen is not None:
            ages.append(asyncio.get_running_loop().time() - seen)
        stored = _parse_time(status.get("lastSyncerHeartbeatTime"))
        if stored is not None:
            # The stored time is truncated to the second: the heartbeat may be up to a second younger.
            ages.append(datetime.now(UTC).timestamp() - stored - 1.0)
        return min(ages) if ages else None

    def _expired(self, target: str, status: dict[str, Any]) -> bool:
        ready = ready_condition(status)
        if ready is None or ready.get("reason") == HEARTBEAT_TIMEOUT:
            return False
        age = self._age(target, status)
        return age is not None and age > self.timeout

    async def check_once(self) -> None:
        targets = self.inventory.sync_targets()
        names = {(t.get("metadata") or {}).get("name") for t in targets}
        self._seen = {name: seen for name, seen in self._seen.items() if name in names}
        for target in targets:
            name = str((target.get("metadata") or {}).get("name", ""))
            if not self._expired(name, target.get("status") or {}):
                continue
            message = f"no syncer heartbeat for more than {self.timeout:g}s"

            def compute(obj: dict[str, Any], name: str = name, message: str = message) -> dict[str, Any]:
                status = obj.setdefault("status", {})
                if self._expired(name, status):  # a heartbeat may have landed meanwhile
                    _set_ready(status, "False", HEARTBEAT_TIMEOUT, message, now_rfc3339())
                return obj

            try:
                await self._update(name, compute)
            except StatusError as exc:
                if exc.code != 404:
                    raise
            log.info("sync target %s: %s", name, message)

    async def _update(self, target: str, compute: Any) -> None:
        inv = self.inventory.space
        rtype = self.catalog.by_group_resource(inv, SYNC_TARGETS)
        assert rtype is not None
        await self.objects.guaranteed_update(inv, rtype, "", target, compute, WriteOptions(manager=MANAGER),
                                             subresource="status")

    def start(self, gate: Gate | None = None) -> None:
        """Check for timed-out heartbeats from now on, or once ``gate`` opens (one hub process does it)."""
        self._task = asyncio.create_task(self._run(gate), name="syncer-heartbeat-timeout")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, gate: Gate | None) -> None:
        if gate is not None:
            await gate.wait()
        while True:
            await asyncio.sleep(self.check_interval)
            try:
                await self.check_once()
            except Exception:
                log.exception("syncer heartbeat check failed")
