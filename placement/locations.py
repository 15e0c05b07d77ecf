"""The "where" predicate: which Locations an EdgePlacement matches and which SyncTargets a Location selects.

Owns the reading of Location and SyncTarget objects and the wording of why a Location or SyncTarget is
not a destination. Never keeps the inventory itself and never does I/O.

Semantics:

- A Location matches a placement if any of ``spec.locationSelectors`` (ORed ``metav1.LabelSelector``s)
  matches the Location's labels; ``{}`` matches every Location, and no selectors match none.
- A Location selects the SyncTargets whose labels its ``spec.instanceSelector`` matches, provided its
  ``spec.resource`` names ``synctargets`` of ``edge.kubestellar.io`` (any version, and an absent
  resource is read as that default). A Location naming another resource, or with an instanceSelector
  that is absent or does not parse, selects nothing; explain says why.
- Each (matched Location, selected SyncTarget) pair is one Destination, so a SyncTarget reached through
  two Locations appears twice in a placement's destinations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery.selectors import NOTHING, LabelSelector
from inventory.kinds import EDGE_GROUP
from placement.downsync import compile_selector
from placement.reasons import failed_requirements, format_selector

SYNC_TARGETS = "synctargets"


@dataclass(frozen=True)
class LocationSpec:
    """What placement needs of a Location: its labels and the SyncTargets it can select."""

    name: str
    labels: Mapping[str, str]
    instance_selector: LabelSelector
    problem: str | None  # why this Location selects nothing, when it cannot select anything


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    raw = metadata(obj).get("labels")
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def compile_location(obj: Mapping[str, Any]) -> LocationSpec:
    name = str(metadata(obj).get("name") or "")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    resource = spec.get("resource")
    if resource is not None and not isinstance(resource, Mapping):
        return LocationSpec(name, labels_of(obj), NOTHING, "spec.resource is not an object; it selects nothing")
    resource = resource or {}
    group = str(resource.get("group", EDGE_GROUP))
    plural = str(resource.get("resource", SYNC_TARGETS))
    if (group, plural) != (EDGE_GROUP, SYNC_TARGETS):
        shown = f"{plural}.{group}" if group else plural
        return LocationSpec(name, labels_of(obj), NOTHING,
                            f"spec.resource is {shown}, not {SYNC_TARGETS}.{EDGE_GROUP}; it selects nothing")
    raw = spec.get("instanceSelector")
    if raw is None:
        return LocationSpec(name, labels_of(obj), NOTHING, "spec.instanceSelector is absent; it selects nothing")
    problems: list[str] = []
    selector = compile_selector(raw, "spec.instanceSelector", problems)
    problem = f"{problems[0]}; it selects nothing" if problems else None
    return LocationSpec(name, labels_of(obj), selector, problem)


def compile_location_selectors(raw: Any, problems: list[str]) -> tuple[LabelSelector, ...]:
    if raw is None or raw == []:
        problems.append("spec.locationSelectors is empty: no Location matches")
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        problems.append("spec.locationSelectors: not a list")
        return ()
    return tuple(compile_selector(item, f"spec.locationSelectors[{i}]", problems) for i, item in enumerate(raw))


def matching_selectors(selectors: Sequence[LabelSelector], labels: Mapping[str, str]) -> list[int]:
    return [i for i, s in enumerate(selectors) if s.matches(labels)]


def location_mismatch(selectors: Sequence[LabelSelector], labels: Mapping[str, str]) -> list[str]:
    """Per locationSelector, the label requirements the Location does not satisfy."""
    if not selectors:
        return ["spec.locationSelectors is empty"]
    return [f"locationSelectors[{i}]: " + "; ".join(failed_requirements(s, labels, "Location"))
            for i, s in enumerate(selectors)]


def target_mismatch(location: LocationSpec, target_labels: Mapping[str, str]) -> str:
    """Why ``location`` does not select a SyncTarget with these labels."""
    if location.problem:
        return f"location {location.name}: {location.problem}"
    failures = "; ".join(failed_requirements(location.instance_selector, target_labels, "SyncTarget"))
    return f"location {location.name}: instanceSelector {format_selector(location.instance_selector)}: {failures}"


def exact_requirement(selector: LabelSelector) -> tuple[str, str] | None:
    """A (key, value) every selected label set must contain, to look candidates up in a label index."""
    if selector.nothing:
        return None
    for requirement in selector.requirements:
        value = selector.requires_exact_match(requirement.key)
        if value is not None:
            return requirement.key, value
    return None


class LocationIndex:
    """Locations compiled once and indexed by a label each one requires, so finding the Locations that
    select one SyncTarget looks at its candidates only (listing 1,000 clusters each reached by its own
    Location would otherwise test a million selectors)."""

    def __init__(self, locations: Iterable[LocationSpec]) -> None:
        self._by_label: dict[tuple[str, str], list[LocationSpec]] = {}
        self._unindexed: list[LocationSpec] = []
        for loc in locations:
            if loc.problem is not None or loc.instance_selector.nothing:
                continue  # selects nothing
            key = exact_requirement(loc.instance_selector)
            if key is None:
                self._unindexed.append(loc)
            else:
                self._by_label.setdefault(key, []).append(loc)

    def reaching(self, labels: Mapping[str, str]) -> list[str]:
        """Names of the Locations whose instanceSelector selects a SyncTarget with ``labels``, sorted."""
        candidates = list(self._unindexed)
        for item in labels.items():
            candidates.extend(self._by_label.get(item, ()))
        return sorted({loc.name for loc in candidates if loc.instance_selector.matches(labels)})
