"""The clusters' reported state: the latest report per (workload object, cluster), in memory.

Owns only the bookkeeping (store, look up, forget, list); whether a report is accepted and when it is
forgotten is decided by the status service. Reports reach every hub process through the log
(``status.reportlog``); syncers also report every object they hold after each (re)connection
(docs/sync-protocol.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placement.model import ObjectRef


@dataclass(frozen=True)
class Report:
    status: dict[str, Any] | None  # the cluster object's .status (None: it has none)
    error: str | None  # why the object could not be applied (None: it was)
    generation: int | None  # the cluster object's metadata.generation when the status was read
    reported_at: str  # RFC 3339, when the hub received it
    drift_corrections: int = 0  # changes made in the cluster that the syncer reverted
    last_drift_correction: str | None = None  # RFC 3339, as the syncer saw it
    applied_revision: str | None = None  # the workload object's content revision the cluster runs
    associated: dict[str, Any] | None = None  # what the workload owns in the cluster (pods, ReplicaSets)
    drift: tuple[dict[str, Any], ...] = ()  # changes made in the cluster: {path, manager, time, corrected}
    retained: dict[str, Any] | None = None  # the cluster's values of the fields it owns, by dotted path


class ReportStore:
    def __init__(self) -> None:
        self._by_object: dict[ObjectRef, dict[str, Report]] = {}
        self._by_target: dict[str, set[ObjectRef]] = {}
        self.on_drop: Callable[[ObjectRef, str, Report], None] | None = None  # told of each report dropped
        # Reports carrying an apply error, kept as they come and go so that metrics need not look at them all.
        self.failing = 0

    def put(self, ref: ObjectRef, target: str, report: Report) -> None:
        reports = self._by_object.setdefault(ref, {})
        previous = reports.get(target)
        self.failing += (report.error is not None) - (previous is not None and previous.error is not None)
        reports[target] = report
        self._by_target.setdefault(target, set()).add(ref)

    def get(self, ref: ObjectRef, target: str) -> Report | None:
        return self._by_object.get(ref, {}).get(target)

    def of(self, ref: ObjectRef) -> dict[str, Report]:
        """Every cluster's latest report on ``ref``, by cluster (a copy)."""
        return dict(self._by_object.get(ref, {}))

    def refs_of(self, target: str) -> list[ObjectRef]:
        """The objects ``target`` has reported on (a copy: callers may drop while iterating)."""
        return list(self._by_target.get(target, ()))

    def drop(self, ref: ObjectRef, target: str) -> None:
        reports = self._by_object.get(ref)
        dropped = reports.pop(target, None) if reports is not None else None
        if reports is not None and not reports:
            del self._by_object[ref]
        if dropped is not None and dropped.error is not None:
            self.failing -= 1
        if dropped is not None and self.on_drop is not None:
            self.on_drop(ref, target, dropped)
        refs = self._by_target.get(target)
        if refs is not None:
            refs.discard(ref)
            if not refs:
                del self._by_target[target]

    def reported(self, ref: ObjectRef) -> list[dict[str, Any]]:
        """Every cluster's latest report on ``ref``, sorted by cluster (the placement REST API's ``reported``)."""
        reports = self._by_object.get(ref, {})
        return [{"cluster": target, "status": r.status, "error": r.error, "generation": r.generation,
                 "reported_at": r.reported_at, "drift_corrections": r.drift_corrections,
                 "last_drift_correction": r.last_drift_correction, "applied_revision": r.applied_revision,
                 "associated": r.associated, "drift": list(r.drift), "retained": r.retained}
                for target, r in sorted(reports.items())]

    def __len__(self) -> int:
        return sum(len(r) for r in self._by_object.values())
