"""``explain``: what an EdgePlacement spec selects against a given inventory and space, and why not the rest.

Owns the assembly of an :class:`Explanation` from a compiled spec and read-only views of the inventory
and of one space's objects. Stores nothing, never changes the engine's state and never does I/O.

Choices: a SyncTarget not among the destinations gets a row only when some Location matched (otherwise
the Location rows already say why); its reasons come from the matched Locations, the same-named one
first (``kubectl kubestellar ensure location`` pairs them by name), at most three of them. A matched
Location that selects nothing is reported under ``problems``. Missing CRDs are those of selected custom
resources whose CRD object this spec does not select itself (with ``crdFollow``, the CRDs present in the
space are selected with them); unserved resources are those the tests name that the space does not serve.
With ``dependencies: Follow``, what the selected objects need is selected too, each with why (the caller's
reference graph answers), and reference cycles are reported under ``problems``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from placement.downsync import DEPENDENCY, FOLLOWED, NamespaceLabels, unserved_resources
from placement.locations import LocationSpec, location_mismatch, matching_selectors, target_mismatch
from placement.model import Destination, Explanation, Mismatch, ObjectRef, WorkloadObject
from placement.spec import PlacementSpec

MAX_TARGET_REASONS = 3

# The objects some selected objects (the roots) need, with why in words, and the reference cycles among them.
Dependencies = Callable[[set[ObjectRef]], tuple[dict[ObjectRef, list[str]], list[str]]]


@dataclass(frozen=True)
class TargetView:
    name: str
    labels: Mapping[str, str]
    uid: str


def describe_ref(ref: ObjectRef) -> str:
    return f"{ref.resource} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.resource} {ref.name}"


def explain_spec(
    spec: PlacementSpec,
    locations: Mapping[str, LocationSpec],
    location_targets: Callable[[str], Iterable[str]],
    targets: Mapping[str, TargetView],
    objects: Iterable[tuple[WorkloadObject, Mapping[str, str]]],
    ns_labels: NamespaceLabels,
    crd_of: Callable[[ObjectRef], ObjectRef | None],
    served: AbstractSet[tuple[str, str]],
    dependencies: Dependencies | None = None,
) -> Explanation:
    problems = list(spec.problems)
    matched: dict[str, list[int]] = {}
    location_mismatches: list[Mismatch] = []
    for name in sorted(locations):
        loc = locations[name]
        indexes = matching_selectors(spec.location_selectors, loc.labels)
        if indexes:
            matched[name] = indexes
        else:
            location_mismatches.append(Mismatch(name, location_mismatch(spec.location_selectors, loc.labels)))

    destinations: list[Destination] = []
    reached: set[str] = set()
    for name in matched:
        selected = sorted(t for t in location_targets(name) if t in targets)
        if locations[name].problem:
            problems.append(f"location {name}: {locations[name].problem}")
        elif not selected:
            problems.append(f"location {name}: instanceSelector selects no SyncTarget")
        for t in selected:
            destinations.append(Destination(name, t, targets[t].uid))
            reached.add(t)
    destinations.sort(key=lambda d: (d.location_name, d.sync_target_name))

    target_mismatches: list[Mismatch] = []
    if matched:
        for name in sorted(set(targets) - reached):
            target_mismatches.append(Mismatch(name, _target_reasons(name, targets[name], matched, locations)))

    selected_objects: dict[ObjectRef, list[int]] = {}
    unselected: list[tuple[WorkloadObject, Mapping[str, str]]] = []
    for obj, labels in sorted(objects, key=lambda item: item[0].ref):
        indexes = [t.index for t in spec.tests if t.matches(obj.ref, labels, ns_labels)]
        if indexes:
            selected_objects[obj.ref] = indexes
        else:
            unselected.append((obj, labels))
    because: dict[ObjectRef, list[str]] = {}
    if spec.follow_dependencies and dependencies is not None:
        because, cycles = dependencies(set(selected_objects))
        problems += cycles
        for ref in because:
            selected_objects[ref] = [*selected_objects.get(ref, ()), DEPENDENCY]
    crds = {crd for ref in selected_objects if (crd := crd_of(ref)) is not None}
    if spec.crd_follow:
        for crd in crds:
            selected_objects[crd] = [*selected_objects.get(crd, ()), FOLLOWED]
    object_mismatches = [
        Mismatch(describe_ref(obj.ref),
                 [r for t in spec.tests if (r := t.mismatch(obj.ref, obj.kind, labels, ns_labels))]
                 or ["spec.downsync is empty"])
        for obj, labels in unselected if obj.ref not in selected_objects]
    missing = {ref.resource for ref in selected_objects if (crd := crd_of(ref)) is not None
               and crd not in selected_objects}
    return Explanation(
        destinations=destinations,
        matched_locations=matched,
        location_mismatches=location_mismatches,
        target_mismatches=target_mismatches,
        objects=selected_objects,
        object_mismatches=object_mismatches,
        missing_crds=sorted(missing),
        unserved_resources=unserved_resources(spec.tests, served),
        problems=problems,
        because=because,
        extra={"matching_location_count": len(matched), "want_singleton_reported_state": spec.want_singleton},
    )


def _target_reasons(name: str, target: TargetView, matched: Mapping[str, list[int]],
                    locations: Mapping[str, LocationSpec]) -> list[str]:
    order = sorted(matched, key=lambda loc: (loc != name, loc))
    reasons = [target_mismatch(locations[loc], target.labels) for loc in order[:MAX_TARGET_REASONS]]
    if len(order) > MAX_TARGET_REASONS:
        reasons.append(f"… and {len(order) - MAX_TARGET_REASONS} more matched Locations do not select it")
    return reasons
