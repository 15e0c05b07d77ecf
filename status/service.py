"""Status coming home: what clusters report, turned into what users see in their spaces.

``StatusService`` is what the sync server hands every report, Event and upsynced object to. It keeps the
latest report per (object, cluster) (``reports``), and from them the status on the objects themselves
(``objectstatus``: singleton and multi-cluster), the built-in summaries with their Events (``summaries``),
StatusCollectors' CombinedStatus (``combined``), forwarded cluster Events (``events``) and upsynced objects
(``upsync``). It decides which reports count: only those about objects of the reporting cluster's desired set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.catalog import Catalog
from apiserver.events import EventRecorder, Involved
from apiserver.service import Objects
from apiserver.store import LogRow
from apiserver.writeoptions import now_rfc3339
from inventory.clusters import Inventory
from kubeclient.workqueue import Gate
from placement.model import ObjectRef
from placement.rollout_runner import CopyHealth
from placement.service import PlacementService
from status.combined import CombinedStatuses
from status.objectstatus import ObjectStatus
from status.readiness import cluster_state
from status.reportlog import ReportLog
from status.reports import Report, ReportStore
from status.summaries import Summaries
from status.upsync import Upsync, UpsyncItem

MAX_EVENT_MESSAGE = 1024


@dataclass(frozen=True)
class ObjectReport:
    """One entry of a status POST, already validated."""

    ref: ObjectRef
    status: dict[str, Any] | None
    error: str | None
    generation: int | None
    drift_corrections: int = 0  # how often the syncer has put the object back after a change in the cluster
    last_drift_correction: str | None = None
    applied_revision: str | None = None
    associated: dict[str, Any] | None = None
    drift: tuple[dict[str, Any], ...] = ()  # the latest change per field made in the cluster: path, manager, time…
    retained: dict[str, Any] | None = None  # the cluster's values of the fields it owns (retainFields), by path


@dataclass(frozen=True)
class ClusterEvent:
    """One Warning Event a cluster recorded about a placed object or something it owns."""

    ref: ObjectRef
    regarding_kind: str
    regarding_name: str
    event_type: str
    reason: str
    message: str
    count: int
    first: str | None
    last: str | None
    source: str


class StatusService:
    def __init__(self, placement: PlacementService, inventory: Inventory, objects: Objects, catalog: Catalog) -> None:
        self.placement = placement
        self.inventory = inventory
        self.objects = objects
        self.catalog = catalog
        self.reports = ReportStore()
        self.report_log = ReportLog(objects, self.reports, self._report_taken)
        self.events = EventRecorder(objects, catalog, "spacehub")
        self.object_status = ObjectStatus(placement, objects, catalog, self.reports)
        self.combined = CombinedStatuses(placement, inventory, objects, catalog)
        self.summaries = Summaries(placement, inventory, objects, catalog, self.reports, self.events, self.combined)
        self.upsync = Upsync(placement, objects, catalog, self.events)
        placement.condition_sources.append(self.upsync.conditions)
        placement.condition_sources.append(self.summaries.refusals)
        placement.moves.copy_ready = self.summaries.copy_ready  # moves wait for their replacements
        placement.moves.timed_out.append(self._move_timed_out)
        self._tasks: set[asyncio.Future[None]] = set()  # Warning Events being written
        placement.rollouts.health = self.copy_health  # staged rollouts advance on the same readiness rules

    async def start(self, annotated: Iterable[LogRow], gate: Gate | None = None) -> None:
        """Follow reports and placement from now on; write statuses, summaries and Events once ``gate`` opens.
        ``annotated``: the live objects whose stored JSON holds :data:`status.objectstatus.MARKER`."""
        await self.objects.run_sync(self.report_log.load)
        self.report_log.start(gate)
        await self.objects.run_sync(self.upsync.load)
        self.upsync.start(gate)
        self.object_status.start(gate)
        self.object_status.load(annotated)
        await self.objects.run_sync(self.summaries.load)
        self.placement.moves.resume(self.summaries.leaving())  # before any syncer resyncs with this process
        self.summaries.start(gate)
        self.placement.drain_listeners.append(self.upsync.on_drained)
        self.inventory.health_listeners.append(self.summaries.on_cluster_health)
        self.summaries.on_drained(set(self.placement.placement_keys()), set())

    async def stop(self) -> None:
        await self.summaries.stop()
        await self.object_status.stop()

    # --- reports -------------------------------------------------------------------------------

    async def report(self, target: str, items: Sequence[ObjectReport]) -> dict[str, Any]:
        """Keep each report on an object of the target's desired set; say which were ignored and why.

        Answered once the reports are in the log, and so in this process's (and soon every process's) store.
        """
        engine = self.placement.engine
        now = now_rfc3339()
        accepted: list[tuple[ObjectRef, Report]] = []
        ignored = []
        for index, item in enumerate(items):
            ref = item.ref
            if not engine.is_destination(ref, target):
                ignored.append({"index": index, "reason": "NotDesired", "message": _not_desired(ref, target)})
                continue
            accepted.append((ref, Report(item.status, item.error, item.generation, now, item.drift_corrections,
                                         item.last_drift_correction, item.applied_revision, item.associated,
                                         item.drift, item.retained)))
        await self.report_log.write(target, accepted)
        return {"accepted": len(accepted), "ignored": ignored}

    def copy_health(self, ref: ObjectRef, target: str, kind: str, content: dict[str, Any]) -> CopyHealth | None:
        """How ``target`` runs its copy of ``ref`` whose content (the revision it was asked for) is ``content``."""
        report = self.reports.get(ref, target)
        if report is None:
            return None
        spec = content.get("spec") if isinstance(content.get("spec"), dict) else {}
        state = cluster_state(kind, spec, report, current_revision=self.placement.content_revision(ref, target),
                              stale=self.inventory.ready(target) is False,
                              copy_error=self.placement.copy_error(ref, target))
        return CopyHealth(state.phase, state.current, state.message, report.status)

    def _report_taken(self, ref: ObjectRef, target: str) -> None:
        self.object_status.on_report(ref)
        self.summaries.schedule(ref, target)

    def reported(self, ref: ObjectRef) -> list[dict[str, Any]]:
        return self.reports.reported(ref)

    def summary(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.summaries.summary(ref)

    async def cluster_events(self, target: str, items: Sequence[ClusterEvent]) -> dict[str, Any]:
        """Record the Warning Events a cluster forwarded, on the placed objects they concern."""
        engine = self.placement.engine
        accepted = 0
        ignored = []
        for index, event in enumerate(items):
            ref = event.ref
            if not engine.is_destination(ref, target):
                ignored.append({"index": index, "reason": "NotDesired", "message": _not_desired(ref, target)})
                continue
            involved = await self._involved(ref)
            if involved is None:
                ignored.append({"index": index, "reason": "NotFound", "message": f"{_what(ref)} is gone"})
                continue
            # kubectl describe shows an Event's component, not its host: the message names the cluster.
            about = "" if (event.regarding_kind, event.regarding_name) == (involved.kind, ref.name) else \
                f" {event.regarding_kind}/{event.regarding_name}"
            message = f"cluster {target}{about}: {event.message}"[:MAX_EVENT_MESSAGE]
            if await self.events.record(involved, event.event_type, event.reason, message, host=target,
                                        count=event.count, first=event.first, last=event.last,
                                        component=event.source or "cluster"):
                accepted += 1
            else:
                ignored.append({"index": index, "reason": "Throttled",
                                "message": f"too many events about {_what(ref)}; this one was dropped"})
        return {"accepted": accepted, "ignored": ignored}

    def _move_timed_out(self, ref: ObjectRef, target: str, waiting: list[str]) -> None:
        """A leaving copy went before its replacements were Ready: a Warning Event on the object (written by
        the lease holder only, as every Event the hub makes)."""
        if self.placement.leadership.held:
            task = asyncio.ensure_future(self._warn_move(ref, target, waiting))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _warn_move(self, ref: ObjectRef, target: str, waiting: list[str]) -> None:
        involved = await self._involved(ref)
        if involved is not None:
            await self.events.record(involved, "Warning", "MoveTimedOut",
                                     f"removed from cluster {target} after the placement's moveTimeoutSeconds, "
                                     f"though not Ready yet on {', '.join(waiting)}", host=target)

    async def upsynced(self, target: str, items: Sequence[UpsyncItem],
                       complete: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
        """Bring a cluster's upsynced objects (and their deletions) into their spaces."""
        return await self.upsync.receive(target, items, complete)

    async def _involved(self, ref: ObjectRef) -> Involved | None:
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            return None
        obj = await self.objects.find(ref.space, rtype, ref.namespace, ref.name)
        if obj is None:
            return None
        return Involved(ref.space, rtype.kind, rtype.api_version, ref.namespace, ref.name,
                        str(obj["metadata"].get("uid", "")))


def _what(ref: ObjectRef) -> str:
    return f'{ref.resource} "{ref.name}"' + (f" in namespace {ref.namespace}" if ref.namespace else "")


def _not_desired(ref: ObjectRef, target: str) -> str:
    return f"{_what(ref)} of space {ref.space} is not in the desired set of {target}"
