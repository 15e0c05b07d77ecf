"""The fleet as the hub knows it: every SyncTarget and Location of the inventory space, kept in memory.

Loaded from the store at startup and kept current from the watch bus. Readers (the placement REST API,
health checks, the sync server) get the objects as stored; listeners (the placement engine) hear of each
Location change and of each SyncTarget change that can matter to placement — labels or spec, not the
status that every heartbeat rewrites; health listeners hear when a SyncTarget's ``Ready`` condition
changes (its syncer stopped or resumed sending heartbeats).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import orjson

from apiserver.service import Objects
from apiserver.store import LogRow
from apiserver.watch import Entry
from inventory.kinds import CREDENTIALS_ROTATED, LOCATIONS, SYNC_TARGETS


class InventoryListener(Protocol):
    def location_changed(self, name: str, location: dict[str, Any] | None) -> None:
        """A Location was written (``location``) or deleted or is being deleted (None)."""

    def sync_target_changed(self, name: str, target: dict[str, Any] | None) -> None:
        """A SyncTarget appeared, changed its labels or spec (``target``), or went away (None)."""


def _ready(target: dict[str, Any]) -> bool | None:
    for condition in (target.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return None


def cordoned(target: Mapping[str, Any]) -> bool:
    """``spec.unschedulable``: no new placements reach the cluster and it takes no new divided replicas."""
    return (target.get("spec") or {}).get("unschedulable") is True


def evict_after(target: Mapping[str, Any]) -> dt.datetime | None:
    """``spec.evictAfter`` (kcp TMC's field): from then on the cluster is drained. None: not set or unreadable."""
    return _time((target.get("spec") or {}).get("evictAfter"))


def not_ready_since(target: Mapping[str, Any]) -> dt.datetime | None:
    """When the cluster's syncer stopped sending heartbeats (its Ready condition turned False); None if Ready."""
    for condition in (target.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready" and condition.get("status") == "False":
            return _time(condition.get("lastTransitionTime")) or dt.datetime.now(dt.UTC)
    return None


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _labels(obj: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(((obj.get("metadata") or {}).get("labels") or {}).items()))


class Inventory:
    def __init__(self, objects: Objects, space: str) -> None:
        self.objects = objects
        self.space = space
        self._targets: dict[str, dict[str, Any]] = {}
        self._locations: dict[str, dict[str, Any]] = {}
        # SyncTargets with spec.evictAfter: the placement service looks at these on every drain, not at all.
        self._evict_after: dict[str, dt.datetime] = {}
        self.listeners: list[InventoryListener] = []
        self.health_listeners: list[Callable[[str], None]] = []  # called with the SyncTarget's name

    def load(self) -> None:
        """Read the inventory space (blocking; call at startup, before ``start``)."""
        for row in self.objects.rows_in(self.space):
            self._observe(row, orjson.loads(row.value))

    def start(self) -> None:
        self.objects.bus.add_listener(self._on_commit)

    def _on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if entry.row.key.space == self.space:
                self._observe(entry.row, None if entry.row.deleted else entry.obj())

    def _observe(self, row: LogRow, obj: dict[str, Any] | None) -> None:
        name = row.key.name
        gone = obj is None or bool((obj.get("metadata") or {}).get("deletionTimestamp"))
        if row.key.resource == LOCATIONS:
            if gone:
                self._locations.pop(name, None)
            else:
                self._locations[name] = obj  # type: ignore[assignment]
            for listener in self.listeners:
                listener.location_changed(name, None if gone else obj)
        elif row.key.resource == SYNC_TARGETS:
            after = None if gone else evict_after(obj)  # type: ignore[arg-type]
            if after is None:
                self._evict_after.pop(name, None)
            else:
                self._evict_after[name] = after
            if gone:
                self._targets.pop(name, None)
                changed = True
            else:
                previous = self._targets.get(name)
                self._targets[name] = obj  # type: ignore[assignment]
                # Status (heartbeats) changes often and does not matter to placement, except the capacity that
                # replica division reads (it changes rarely: a Node added or removed); a credential rotation
                # matters to the hub's token cache.
                changed = previous is None or _labels(previous) != _labels(obj) or \
                    previous.get("spec") != obj.get("spec") or \
                    _allocatable(previous) != _allocatable(obj) or \
                    _rotated(previous) != _rotated(obj)  # type: ignore[arg-type]
                if previous is not None and _ready(previous) != _ready(obj):  # type: ignore[arg-type]
                    for health in self.health_listeners:
                        health(name)
            if changed:
                for listener in self.listeners:
                    listener.sync_target_changed(name, None if gone else obj)

    def sync_targets(self) -> list[dict[str, Any]]:
        return [self._targets[n] for n in sorted(self._targets)]

    def draining(self) -> dict[str, dt.datetime]:
        """The SyncTargets that have ``spec.evictAfter``, with its time."""
        return dict(self._evict_after)

    def sync_target(self, name: str) -> dict[str, Any] | None:
        return self._targets.get(name)

    def location(self, name: str) -> dict[str, Any] | None:
        return self._locations.get(name)

    def locations(self) -> list[dict[str, Any]]:
        return [self._locations[n] for n in sorted(self._locations)]

    def ready(self, name: str) -> bool | None:
        """Whether the SyncTarget's syncer sends heartbeats: its ``Ready`` condition (None: never sent one,
        or no such target)."""
        target = self._targets.get(name)
        return None if target is None else _ready(target)


def _allocatable(target: dict[str, Any]) -> Any:
    return (target.get("status") or {}).get("allocatable")


def _rotated(target: dict[str, Any]) -> Any:
    return ((target.get("metadata") or {}).get("annotations") or {}).get(CREDENTIALS_ROTATED)
