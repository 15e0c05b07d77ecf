"""The records and keys the placement engine's parts share: one record per EdgePlacement and per SyncTarget.

A :class:`PlacementRecord` holds both halves of a placement's state, where it reaches (written by
:mod:`placement.covering`) and what it selects (written by :mod:`placement.workloads`), because the
desired sets (:mod:`placement.desired`) read both. A :class:`TargetRecord` names the cover its
SyncTarget is in. Plain data: never does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.dependencies import Because
from placement.model import EntryKind, ObjectRef
from placement.ordering import CRD_RESOURCE, NAMESPACE_RESOURCE
from placement.spec import PlacementSpec

PKey = tuple[str, str]  # (space, EdgePlacement name)
CoverKey = frozenset[PKey]  # the placements covering a SyncTarget
NsKey = tuple[str, str]  # (space, namespace)

NO_COVER: CoverKey = frozenset()


def entry_kind(ref: ObjectRef) -> EntryKind:
    if ref.resource == NAMESPACE_RESOURCE:
        return "namespace"
    if ref.resource == CRD_RESOURCE:
        return "crd"
    return "object"


def namespace_ref(key: NsKey) -> ObjectRef:
    return ObjectRef(key[0], NAMESPACE_RESOURCE, "", key[1])


def decrement(counts: dict[tuple[str, str], int], key: tuple[str, str]) -> int:
    """Decrement a positive counter, dropping it at zero; returns the new value."""
    n = counts[key] - 1
    if n:
        counts[key] = n
    else:
        del counts[key]
    return n


@dataclass
class PlacementRecord:
    key: PKey
    spec: PlacementSpec
    locations: dict[str, list[int]] = field(default_factory=dict)  # matched Location -> selector indexes
    selected: dict[ObjectRef, list[int]] = field(default_factory=dict)  # object -> downsync test indexes
    namespace_counts: dict[NsKey, int] = field(default_factory=dict)  # selected objects per namespace
    # Selected objects per (group, plural) of a named group: the custom resources ``crdFollow`` sends CRDs for.
    kind_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    # What ``dependencies: Follow`` sends because the selected objects reference it, and why.
    followed: dict[ObjectRef, list[Because]] = field(default_factory=dict)
    # Destinations per matched Location: {(SyncTarget, UID)}; and how many Locations reach each target.
    destinations: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    target_paths: dict[str, int] = field(default_factory=dict)
    location_count: int = 0  # as last reported through drain_dirty (status.matchingLocationCount)
    # A scheduled placement (``numberOfClusters`` …): the SyncTargets it chose, the only ones it reaches of those
    # its Locations select (``placement.choices``); None: not scheduled, it reaches all of them.
    chosen: frozenset[str] | None = None


@dataclass
class TargetRecord:
    name: str
    labels: dict[str, str]
    uid: str
    locations: set[str] = field(default_factory=set)
    cover: CoverKey = NO_COVER
    # Cordoned (``spec.unschedulable``): only the placements covering it when it was cordoned still reach it.
    allowed: CoverKey | None = None
    evicted: bool = False  # drained: no Location selects it any more, so everything leaves it
