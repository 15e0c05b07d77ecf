"""What placement places: the kinds it never places, the objects that are not workloads (being deleted, brought
up by upsync), EdgePlacements meant for child hubs (objects to place, not placements here), and what an
object's own annotations narrow."""

from __future__ import annotations

from typing import Any

from apiserver.watch import Entry
from inventory.kinds import EDGE_GROUP, LOCATIONS, SYNC_TARGETS
from placement.projection import CHILD_HUB_PLACEMENT, child_hub_levels
from placement.results import PLACEMENTS, SLICES

CUSTOMIZERS = f"customizers.{EDGE_GROUP}"
TARGET_CLUSTERS_ANNOTATION = "spacehub.io/target-clusters"
# Objects upsync brought up from clusters carry this label; they are never placed back down (upsync wins).
UPSYNCED_LABEL = "spacehub.io/upsynced"
SPACES = "spaces.spacehub.io"
# Placement machinery, events and the spaces nested in a space are never placed on clusters; nor are a space's
# Leases, its own controllers' leader election: a copy in a cluster would mislead the cluster's controllers. Nor
# are the kinds a space serves read-only (Catalog.served_read_only): the hub's own reports about placed objects
# (a PlacementStatus placed would get a PlacementStatus in turn, without end).
NOT_PLACED = frozenset({PLACEMENTS, SLICES, CUSTOMIZERS, LOCATIONS, SYNC_TARGETS, "events", SPACES,
                        "leases.coordination.k8s.io"})


def for_child_hubs(placement: dict[str, Any]) -> bool:
    return child_hub_levels(((placement.get("metadata") or {}).get("annotations") or {}).get(CHILD_HUB_PLACEMENT)) > 0


def records_space(entry: Entry) -> bool:
    """Whether a change is an EdgePlacement that makes its space's objects worth recording (one for child hubs is
    itself an object to place)."""
    if entry.row.deleted:
        return False
    obj = entry.obj()
    return not (obj.get("metadata") or {}).get("deletionTimestamp") and not for_child_hubs(obj)


def is_workload(obj: dict[str, Any]) -> bool:
    """Whether an object of a placed kind is a workload: not being deleted, not brought up from clusters by
    upsync (upsync wins: it is never placed back down)."""
    meta = obj.get("metadata") or {}
    return not meta.get("deletionTimestamp") and (meta.get("labels") or {}).get(UPSYNCED_LABEL) != "true"


def labels_of(obj: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(((obj.get("metadata") or {}).get("labels") or {}).items()))


def target_clusters(obj: dict[str, Any]) -> frozenset[str] | None:
    """``spacehub.io/target-clusters: a,b``: the object goes only to these of the clusters its placements reach
    (kcp's per-object target annotation); absent, to all of them."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TARGET_CLUSTERS_ANNOTATION)
    if not isinstance(value, str):
        return None
    return frozenset(name.strip() for name in value.split(",") if name.strip())
