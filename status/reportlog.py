"""Status reports kept in the log, so that every hub process knows every cluster's latest report.

A syncer posts its reports to whichever hub process it reached, while statuses, summaries and drains are
worked out by the lease holder. So each accepted report is written to the shared log as an internal
record (never served as an object, one per (object, cluster), replaced by the next report), and every
process, the receiver included, takes it into its ``ReportStore`` from its log feed before the POST is
answered. A report forgotten because its object left the cluster is deleted by the lease holder. A
restarted hub therefore knows the last reports before any syncer reconnects.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from placement.model import ObjectRef
from spaces.controllers import Gate
from spaces.service import Objects
from spaces.store import INTERNAL_SPACE, Key, Write
from spaces.watch import Entry
from status.reports import Report, ReportStore

RESOURCE = "statusreports"


def record_key(target: str, ref: ObjectRef) -> Key:
    # A digest: a SyncTarget name and an object reference together outgrow the log's name column.
    name = hashlib.sha256("\0".join((target, ref.space, ref.resource, ref.namespace, ref.name)).encode()).hexdigest()
    return Key(INTERNAL_SPACE, RESOURCE, "", name)


def _encode(target: str, ref: ObjectRef, r: Report) -> bytes:
    return orjson.dumps({"target": target, "ref": [ref.space, ref.resource, ref.namespace, ref.name],
                         "status": r.status, "error": r.error, "generation": r.generation,
                         "reportedAt": r.reported_at, "driftCorrections": r.drift_corrections,
                         "lastDriftCorrection": r.last_drift_correction, "appliedRevision": r.applied_revision,
                         "associated": r.associated})


def _decode(value: bytes) -> tuple[str, ObjectRef, Report]:
    d: dict[str, Any] = orjson.loads(value)
    report = Report(d.get("status"), d.get("error"), d.get("generation"), str(d.get("reportedAt") or ""),
                    int(d.get("driftCorrections") or 0), d.get("lastDriftCorrection"), d.get("appliedRevision"),
                    d.get("associated"))
    return str(d["target"]), ObjectRef(*d["ref"]), report


class ReportLog:
    def __init__(self, objects: Objects, reports: ReportStore, applied: Callable[[ObjectRef], None]) -> None:
        self.objects = objects
        self.reports = reports
        self.applied = applied  # told of each report taken in (statuses and summaries look again)
        self.gate: Gate | None = None
        self._taking = False
        self._deleting: set[asyncio.Task[Any]] = set()
        reports.on_drop = self._dropped

    def load(self) -> None:
        """Take in the reports an earlier hub process kept (blocking; call at startup)."""
        _rev, rows = self.objects.store.list(INTERNAL_SPACE, RESOURCE, None)
        for row in rows:
            target, ref, report = _decode(row.value)
            self.reports.put(ref, target, report)

    def start(self, gate: Gate | None) -> None:
        self.gate = gate
        self.objects.bus.add_internal_listener(RESOURCE, self.on_records)

    async def write(self, target: str, reports: Sequence[tuple[ObjectRef, Report]]) -> None:
        """Keep these reports (durably, for every process); raises if the log refused any."""
        if not reports:
            return
        writes = [Write(record_key(target, ref), _encode(target, ref, report)) for ref, report in reports]
        for result in await self.objects.writer.write_many(writes):
            if isinstance(result, BaseException):
                raise result

    def on_records(self, entries: Sequence[Entry]) -> None:
        self._taking = True
        try:
            for entry in entries:
                target, ref, report = _decode(entry.row.value)
                if entry.row.deleted:
                    self.reports.drop(ref, target)
                else:
                    self.reports.put(ref, target, report)
                self.applied(ref)
        finally:
            self._taking = False

    def _dropped(self, ref: ObjectRef, target: str, report: Report) -> None:
        """A report was forgotten here (its object left the cluster): the lease holder deletes its record."""
        if self._taking or (self.gate is not None and not self.gate.held):
            return
        write = Write(record_key(target, ref), _encode(target, ref, report), deleted=True)
        task = asyncio.get_running_loop().create_task(self.objects.writer.write_many([write]))
        self._deleting.add(task)  # results are not awaited: a record already gone is what was wanted
        task.add_done_callback(self._deleting.discard)
