"""The placement data model shared by the engine, the hub glue and the REST API.

Plain frozen dataclasses: the engine computes them from plain objects and never knows whether those
came from SQL or a watch; the REST API only renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from placement.references import Labels, Reference


@dataclass(frozen=True, order=True)
class ObjectRef:
    """A workload object in a space, by group-qualified plural resource (``deployments.apps``)."""

    space: str
    resource: str  # plural.group, or plural for the core group
    namespace: str  # "" for cluster-scoped objects
    name: str

    @property
    def group(self) -> str:
        return self.resource.partition(".")[2]

    @property
    def plural(self) -> str:
        return self.resource.partition(".")[0]


@dataclass(frozen=True)
class WorkloadObject:
    """What placement needs to know about a workload object (its content stays in the store)."""

    ref: ObjectRef
    kind: str
    api_version: str
    labels: tuple[tuple[str, str], ...]
    revision: int
    namespaced: bool
    # For a CustomResourceDefinition: the (group, plural) it defines, so that a selected custom
    # resource can be linked to the CRD it needs.
    defines: tuple[str, str] | None = None
    # What its clusters' copies depend on besides the object (the resourceVersion of the Customizer it
    # names): when it changes, the object is sent again as if it had changed.
    shaping: str = ""
    # What ``dependencies: Follow`` sends with it (placement.references): the objects of its namespace it
    # references, the labels of its pods (None without a pod template) and, for a Service, its selector.
    references: tuple[Reference, ...] = ()
    pod_labels: Labels | None = None
    pod_selector: Labels | None = None


@dataclass(frozen=True)
class Destination:
    """One SinglePlacement: a SyncTarget reached through a Location."""

    location_name: str
    sync_target_name: str
    sync_target_uid: str


EntryKind = Literal["namespace", "crd", "object"]


@dataclass(frozen=True)
class DesiredEntry:
    """One thing a cluster must have. ``implicit`` namespaces exist only because placed objects need them
    (they carry no labels or annotations of their own and are never deleted while still needed)."""

    ref: ObjectRef
    kind: EntryKind
    implicit: bool = False
    placements: tuple[tuple[str, str], ...] = ()  # (space, placement name) that put it there


@dataclass(frozen=True)
class StatusWants:
    """What the EdgePlacements selecting one object ask of its status, and through which clusters."""

    singleton: bool = False  # a selecting placement asks wantSingletonReportedState (an OR, as KubeStellar's)
    multi: bool = False  # a selecting placement asks wantMultiWECReportedState
    singleton_targets: frozenset[str] = frozenset()  # reached through placements wanting singleton status
    multi_targets: frozenset[str] = frozenset()  # reached through placements wanting multi-cluster status
    # (space, placement) -> the StatusCollectors named by the downsync tests that selected the object
    collectors: tuple[tuple[tuple[str, str], tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Change:
    """A change of one target's desired set, in per-target sequence order."""

    seq: int
    op: Literal["upsert", "delete"]
    entry: DesiredEntry


@dataclass
class Mismatch:
    """Why something did not match: which selector or test, and which field excluded it."""

    name: str
    reasons: list[str] = field(default_factory=list)


@dataclass
class Explanation:
    """What an EdgePlacement spec selects (or would select) and why other things are not selected."""

    destinations: list[Destination]
    matched_locations: dict[str, list[int]]  # location name -> indexes of the locationSelectors it matched
    location_mismatches: list[Mismatch]
    target_mismatches: list[Mismatch]  # SyncTargets of matched Locations not selected by instanceSelector
    objects: dict[ObjectRef, list[int]]  # selected object -> indexes of the downsync tests it matched
    object_mismatches: list[Mismatch]  # every object in the space not selected, with each test's reason
    missing_crds: list[str]  # "plural.group" of selected custom resources whose CRD is not selected
    unserved_resources: list[str]  # what the downsync tests name that the space does not serve
    problems: list[str]  # invalid spec parts (e.g. a downsync test that discriminates nothing)
    because: dict[ObjectRef, list[str]] = field(default_factory=dict)  # dependencies: Follow, why each is sent
    extra: dict[str, Any] = field(default_factory=dict)
