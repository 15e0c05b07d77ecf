"""Status reports kept in the log (``status.records``), so that every hub process knows every cluster's
latest report: the lease holder writes statuses, summaries and drains from reports that reached any process.

One record per (object, cluster), replaced by the next report; a report forgotten because its object left
the cluster is deleted by the lease holder. The POST is answered once the reports are in the log, and so in
the receiving process's store. A restarted hub knows the last reports before any syncer reconnects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from apiserver.service import Objects
from apiserver.store import Key
from apiserver.watch import Entry
from kubeclient.workqueue import Gate
from placement.model import ObjectRef
from status.records import Records
from status.reports import Report, ReportStore


def _encode(target: str, ref: ObjectRef, r: Report) -> bytes:
    return orjson.dumps({"target": target, "ref": [ref.space, ref.resource, ref.namespace, ref.name],
                         "status": r.status, "error": r.error, "generation": r.generation,
                         "reportedAt": r.reported_at, "driftCorrections": r.drift_corrections,
                         "lastDriftCorrection": r.last_drift_correction, "appliedRevision": r.applied_revision,
                         "associated": r.associated, "drift": r.drift, "retained": r.retained})


def _decode(value: bytes) -> tuple[str, ObjectRef, Report]:
    d: dict[str, Any] = orjson.loads(value)
    report = Report(d.get("status"), d.get("error"), d.get("generation"), str(d.get("reportedAt") or ""),
                    int(d.get("driftCorrections") or 0), d.get("lastDriftCorrection"), d.get("appliedRevision"),
                    d.get("associated"), tuple(d.get("drift") or ()), d.get("retained"))
    return str(d["target"]), ObjectRef(*d["ref"]), report


class ReportLog:
    def __init__(self, objects: Objects, reports: ReportStore, applied: Callable[[ObjectRef, str], None]) -> None:
        self.records = Records(objects, "statusreports")
        self.reports = reports
        self.applied = applied  # told of each report taken in, and its cluster (statuses and summaries look again)
        self.gate: Gate | None = None
        self._taking = False
        reports.on_drop = self._dropped

    def _key(self, target: str, ref: ObjectRef) -> Key:
        return self.records.key(target, ref.space, ref.resource, ref.namespace, ref.name)

    def load(self) -> None:
        """Take in the reports an earlier hub process kept (blocking; call at startup)."""
        for value in self.records.load():
            target, ref, report = _decode(value)
            self.reports.put(ref, target, report)

    def start(self, gate: Gate | None) -> None:
        self.gate = gate
        self.records.listen(self.on_records)

    async def write(self, target: str, reports: Sequence[tuple[ObjectRef, Report]]) -> None:
        """Keep these reports (durably, for every process); raises if the log refused any."""
        await self.records.write([(self._key(target, ref), _encode(target, ref, r), False) for ref, r in reports])

    def on_records(self, entries: Sequence[Entry]) -> None:
        self._taking = True
        try:
            for entry in entries:
                target, ref, report = _decode(entry.row.value)
                if entry.row.deleted:
                    self.reports.drop(ref, target)
                else:
                    self.reports.put(ref, target, report)
                self.applied(ref, target)
        finally:
            self._taking = False

    def _dropped(self, ref: ObjectRef, target: str, report: Report) -> None:
        """A report was forgotten here (its object left the cluster): the lease holder deletes its record."""
        if self._taking or (self.gate is not None and not self.gate.held):
            return
        self.records.write_soon([(self._key(target, ref), _encode(target, ref, report), True)])
