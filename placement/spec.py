"""Compiling an EdgePlacement ``spec`` into the form the engine evaluates.

Owns the split of a spec into its where part (``locationSelectors``), its what part (``downsync``) and
its flags, and the list of problems found while compiling. Never evaluates anything and never does I/O.
``upsync`` is kept as given: the engine does not use it (the syncers' upsync rules do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery.selectors import LabelSelector
from cel.stdlib.timestamps import parse_duration
from cel.types import EvalError
from placement.downsync import DownsyncTest, compile_test
from placement.locations import compile_location_selectors
from placement.schedulingspec import SchedulingSpec, compile_scheduling
from spaces.nsmapping import MAPPING_FIELD, NamespaceMapping, parse


@dataclass(frozen=True)
class PlacementSpec:
    location_selectors: tuple[LabelSelector, ...]
    tests: tuple[DownsyncTest, ...]
    want_singleton: bool
    want_multi: bool  # wantMultiWECReportedState (default true): the object's status aggregates all its clusters'
    crd_follow: bool  # crdFollow: a selected custom resource takes its CRD along (instead of missingCRDs)
    # dependencies: Follow: what the selected objects reference goes with them (placement.dependencies)
    follow_dependencies: bool
    upsync: tuple[Any, ...]
    problems: tuple[str, ...]
    scheduling: SchedulingSpec | None = None  # None: every cluster the Locations select (placement.scheduler)
    namespace_mapping: NamespaceMapping | None = None  # None: the space's default (spaces.nsmapping)

    @property
    def uses_namespace_selectors(self) -> bool:
        """True if a Namespace's labels can change what this spec selects."""
        return any(t.namespace_selectors is not None for t in self.tests)


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The spec of an EdgePlacement, or the mapping itself when it is already a spec."""
    spec = obj.get("spec")
    if isinstance(spec, Mapping):
        return spec
    return {} if "metadata" in obj or "kind" in obj else obj


def compile_spec(spec: Mapping[str, Any]) -> PlacementSpec:
    problems: list[str] = []
    where = compile_location_selectors(spec.get("locationSelectors"), problems)
    raw_tests = spec.get("downsync")
    tests: tuple[DownsyncTest, ...] = ()
    if raw_tests is None or raw_tests == []:
        problems.append("spec.downsync is empty: no object is selected")
    elif not isinstance(raw_tests, Sequence) or isinstance(raw_tests, str):
        problems.append("spec.downsync: not a list")
    else:
        tests = tuple(compile_test(i, raw, problems) for i, raw in enumerate(raw_tests))
    upsync = spec.get("upsync")
    return PlacementSpec(
        location_selectors=where,
        tests=tests,
        want_singleton=bool(spec.get("wantSingletonReportedState")),
        want_multi=spec.get("wantMultiWECReportedState") is not False,  # on unless the placement says false
        crd_follow=spec.get("crdFollow") is True,
        follow_dependencies=spec.get("dependencies") == "Follow",
        upsync=tuple(upsync) if isinstance(upsync, Sequence) and not isinstance(upsync, str) else (),
        problems=tuple(problems),
        scheduling=compile_scheduling(spec),
        namespace_mapping=parse(spec.get(MAPPING_FIELD)),
    )


def failover_after(spec: Mapping[str, Any]) -> float | None:
    """A placement's ``spec.failover.after`` in seconds (None: not set, or one the CRD's pattern refuses that
    an older object may still hold)."""
    failover = spec.get("failover")
    text = failover.get("after") if isinstance(failover, Mapping) else None
    try:
        return parse_duration(text).total_seconds() if isinstance(text, str) else None
    except EvalError:
        return None
