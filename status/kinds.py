"""The status kinds from our own CRD definitions: PlacementStatus, StatusCollector, CombinedStatus, and the
StatusCollector strategy that refuses a collector whose CEL would not compile, type-check or fit the cost
budget. PlacementStatus and CombinedStatus are written by the hub only: clients read (and watch) them."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import duplicate, forbidden, invalid, not_supported, required
from apiserver.customresources import types_from_crd_files
from apiserver.resourcetypes import ResourceType, Strategy
from status.collectors import AGGREGATOR_TYPES, CollectorError, Problem, compile_collector

CRDS = Path(__file__).parent / "crds"
READ_ONLY = ("get", "list", "watch")
_READ_ONLY_KINDS = frozenset({"PlacementStatus", "CombinedStatus"})


class StatusCollectorStrategy(Strategy):
    """The CRD's own strategy (defaults, schema, pruning) and then the collector compiled, as KubeStellar's
    controller would, but at the door: a bad collector is refused with the CEL error instead of being
    stored with ``status.errors``."""

    def __init__(self, base: Strategy) -> None:
        self.base = base

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        self.base.prepare_for_create(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self.base.prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        return self.base.validate(obj) or _compile(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return self.base.validate_update(new, old) or _compile(new)


def _compile(obj: dict[str, Any]) -> list[Cause]:
    try:
        compile_collector(obj.get("spec") or {}, name=str((obj.get("metadata") or {}).get("name") or ""))
    except CollectorError as exc:
        return [_cause(problem) for problem in exc.problems]
    return []


def _cause(problem: Problem) -> Cause:
    if problem.reason == "FieldValueRequired":
        return required(problem.path, problem.detail)
    if problem.reason == "FieldValueDuplicate":
        return duplicate(problem.path, problem.value)
    if problem.reason == "FieldValueForbidden":
        return forbidden(problem.path, problem.detail)
    if problem.reason == "FieldValueNotSupported":
        return not_supported(problem.path, problem.value, AGGREGATOR_TYPES)
    return invalid(problem.path, problem.value, problem.detail)


@functools.cache
def status_types() -> tuple[ResourceType, ...]:
    """StatusCollector (cluster-scoped, checked by :class:`StatusCollectorStrategy`), and CombinedStatus and
    PlacementStatus (namespaced, read-only, without managedFields: only the hub writes them)."""
    out = []
    for t in types_from_crd_files(CRDS):
        if t.kind == "StatusCollector":
            t = dataclasses.replace(t, strategy=StatusCollectorStrategy(t.strategy))
        elif t.kind in _READ_ONLY_KINDS:
            t = dataclasses.replace(t, verbs=READ_ONLY, tracks_managed_fields=False)
        out.append(t)
    return tuple(out)


__all__ = ["StatusCollectorStrategy", "status_types"]
