"""How many objects each cluster holds: the one fleet-wide figure the existing APIs give only per cluster
(``GET /placement/v1/clusters/<name>/desired``), so a page of a thousand clusters would need a thousand
requests.

Read from the placement engine, which every hub process keeps current from the shared log, so any process
answers the same. It never writes, never reads the store and starts no cluster's change log.
"""

from __future__ import annotations

from typing import Any, Protocol


class DesiredSets(Protocol):
    def desired_count(self, target: str) -> int: ...


class SyncTargets(Protocol):
    def sync_targets(self) -> list[dict[str, Any]]: ...


def object_counts(engine: DesiredSets, inventory: SyncTargets) -> list[dict[str, Any]]:
    """``[{"name", "objects"}]`` per SyncTarget, by name: the entries of its desired set (implicit namespaces
    included: the syncer creates those in the cluster too)."""
    names = sorted(str((t.get("metadata") or {}).get("name", "")) for t in inventory.sync_targets())
    return [{"name": name, "objects": engine.desired_count(name)} for name in names if name]
