"""The built-in summary of every placed object: a PlacementStatus in its space, and the Events of its story.

For each object an EdgePlacement selects, one ``PlacementStatus`` (``status.spacehub.io/v1alpha1``) in the
object's namespace (``spacehub-report`` for cluster-scoped objects) says how many clusters it is placed on
and how many of them applied it, run it ready, failed it or went stale, the worst state with its cluster,
and every cluster's state (``status.readiness``) with what the workload owns there. It is owned by the
object (garbage-collected with it) and deleted when no placement selects the object any more.

Kept as it goes (``status.tally``): a report or a cluster's heartbeats stopping or resuming recompute that one
cluster's state, and the counts follow by deltas; placement changing the object's destinations, and a change
of the object itself, recompute every cluster's. Written only when something a user sees changed (a change
of the object that moves no cluster's state is not, unless some cluster is Ready: a Ready entry vouches for
the revision written with it, which moves wait on); coalesced: a burst of reports on one object makes one
write, at most ``DELAY`` seconds after the first. The same pass records the story as Events on the object:
placed on and removed from clusters, apply failures and drift corrections with the cluster's message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.events import EventRecorder, Involved
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from inventory.clusters import Inventory
from kubeclient.workqueue import Gate, WorkQueue
from placement.model import ObjectRef
from placement.service import PlacementService
from status.combined import COLLECTORS, CombinedStatuses
from status.readiness import KINDS_WITH_READINESS, cluster_state
from status.reports import Report, ReportStore
from status.tally import Row, Tally, cluster_row

log = logging.getLogger(__name__)
# A report's error of this reason says the cluster does not serve the object's type (docs/sync-protocol.md).
CRD_MISSING = "CRDMissing"
NOT_ADOPTED = "NotAdopted"  # the cluster has the object and it is not spacehub's (the syncer's reason)
_APPLY_REASONS = (CRD_MISSING, NOT_ADOPTED)  # failures told under their own reason; others are ApplyFailed
SHOWN_REFUSALS = 3

GROUP = "status.spacehub.io"
VERSION = "v1alpha1"
RESOURCE = f"placementstatuses.{GROUP}"
REPORT_NAMESPACE = "spacehub-report"  # where the summaries of cluster-scoped objects live (KubeStellar's idea)
MANAGER = "spacehub-status"
DELAY = 0.2  # seconds a summary waits for more reports before it is written (coalescing)
# Under load a summary waits longer: LOAD_FACTOR times what its last recomputation took (a thousand clusters'
# states, the write), so that one busy object's summary takes at most about a sixth of the event loop, and at
# most MAX_DELAY, so that it stays current within a second of a report.
LOAD_FACTOR = 5.0
MAX_DELAY = 0.8
OBJECT_LABELS = ("group", "resource", "name")


def summary_name(ref: ObjectRef) -> str:
    """``<plural>.<group>.<name>`` (``core`` for the core group): readable, and one per object of a namespace."""
    return f"{ref.plural}.{ref.group or 'core'}.{ref.name}"


class Summaries(WorkQueue):
    def __init__(self, placement: PlacementService, inventory: Inventory, objects: Objects, catalog: Catalog,
                 reports: ReportStore, events: EventRecorder, combined: CombinedStatuses) -> None:
        super().__init__("placement-summaries")
        self.placement = placement
        self.inventory = inventory
        self.objects = objects
        self.catalog = catalog
        self.reports = reports
        self.events = events
        self.combined = combined
        self._targets_of: dict[ObjectRef, frozenset[str]] = {}  # the destinations each summary was written for
        self._objects_on: dict[str, set[ObjectRef]] = {}  # the reverse: summarised objects per cluster
        # last error, drift count and drift entries told of, per (object, cluster)
        self._seen: dict[tuple[ObjectRef, str], tuple[str | None, int, frozenset[tuple[str, str]]]] = {}
        self._refused: dict[ObjectRef, set[str]] = {}  # clusters whose object is not spacehub's (NotAdopted)
        # What was last told per (object, cluster): copy error, unknown parameters, conflict.
        self._copy_told: dict[tuple[ObjectRef, str], tuple[str | None, frozenset[str], str | None]] = {}
        self._due: set[ObjectRef] = set()
        # The clusters whose state each due summary must recompute (None: all of them).
        self._recount: dict[ObjectRef, set[str] | None] = {}
        self._tallies: dict[ObjectRef, Tally] = {}  # each summary as this process last computed it
        self._took: dict[ObjectRef, float] = {}  # seconds each summary's last recomputation took
        self._bodies: dict[ObjectRef, dict[str, Any]] = {}  # each summary as stored, for the REST API
        self._gate: Gate | None = None

    def load(self) -> None:
        """Know the summaries an earlier hub process wrote, so that those no longer wanted go (blocking)."""
        for row in self.objects.rows_of_resource(RESOURCE):
            self._follow_stored(row.key.space, orjson.loads(row.value), deleted=False)

    def _follow_stored(self, space: str, stored: dict[str, Any], deleted: bool) -> None:
        """Know each summary as stored, whichever hub process wrote it: the REST API serves it, and a process
        that comes to hold the lease knows which clusters were already told of."""
        obj = stored.get("object") or {}
        group, plural = str(obj.get("group") or ""), str(obj.get("resource") or "")
        resource = f"{plural}.{group}" if group else plural
        ref = ObjectRef(space, resource, str(obj.get("namespace") or ""), str(obj.get("name") or ""))
        self._tallies.pop(ref, None)  # another process wrote it: compare with the stored one before writing
        if deleted:
            self._bodies.pop(ref, None)
            return
        self._bodies[ref] = {k: v for k, v in stored.items() if k not in ("apiVersion", "kind", "metadata")}
        self._track(ref, frozenset(str(c.get("name")) for c in stored.get("clusters") or [] if c.get("name")))

    def start(self, gate: Gate | None = None) -> None:
        self._gate = gate
        self.placement.drain_listeners.append(self.on_drained)
        self.objects.bus.add_listener(self.on_commit)
        super().start(gate)
        for ref in list(self._targets_of):
            self.schedule(ref)

    # --- triggers ------------------------------------------------------------------------------

    def schedule(self, ref: ObjectRef, target: str | None = None) -> None:
        """Recompute ``ref``'s summary soon: ``target``'s state only, or (None) every cluster's. The first trigger
        waits ``DELAY`` for others to join it."""
        if target is None:
            self._recount[ref] = None
        else:
            dirty = self._recount.setdefault(ref, set())
            if dirty is not None:
                dirty.add(target)
        if ref not in self._due:
            self._due.add(ref)
            delay = min(MAX_DELAY, max(DELAY, LOAD_FACTOR * self._took.get(ref, 0.0)))
            asyncio.get_running_loop().call_later(delay, self._release, ref)

    def _release(self, ref: ObjectRef) -> None:
        self._due.discard(ref)
        self.add(ref)

    def on_drained(self, placements: set[tuple[str, str]], _targets: set[str]) -> None:
        engine = self.placement.engine
        spaces = {space for space, _ in placements}
        for key in placements:
            for ref in engine.selected_objects(*key):
                self.schedule(ref)
        for ref in self._targets_of:  # objects a changed placement may no longer select
            if ref.space in spaces:
                self.schedule(ref)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        """A summarised object changed (its content feeds CombinedStatus), or a StatusCollector did."""
        for entry in entries:
            key = entry.row.key
            if key.resource == RESOURCE:
                # The lease holder wrote it and knows it already: decoding an entry per cluster again on every
                # write would only cost it time. The other processes follow what it wrote.
                if self._gate is not None and not self._gate.held:
                    self._follow_stored(key.space, entry.obj(), entry.row.deleted)
                elif entry.row.deleted:
                    self._deleted_summary(key.space, key.namespace)
                continue
            if key.resource == COLLECTORS:
                for ref in self.combined.users(key.space, key.name):
                    self.schedule(ref)
                continue
            ref = ObjectRef(key.space, key.resource, key.namespace, key.name)
            if ref in self._targets_of:
                self.schedule(ref)

    def on_cluster_health(self, target: str) -> None:
        """A cluster went stale or came back: its state in every object summarised on it changes."""
        for ref in list(self._objects_on.get(target, ())):
            self.schedule(ref, target)

    def _deleted_summary(self, space: str, namespace: str) -> None:
        """A summary was deleted by somebody else (its namespace went): the objects whose summaries live there
        write theirs again at their next trigger, even one that changes nothing."""
        for ref, tally in self._tallies.items():
            if ref.space == space and (ref.namespace or REPORT_NAMESPACE) == namespace:
                tally.unwritten = True

    # --- one object --------------------------------------------------------------------------------

    async def handle(self, ref: Any) -> bool:
        assert isinstance(ref, ObjectRef)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            return await self._recompute(ref)
        finally:
            if ref in self._targets_of:
                self._took[ref] = loop.time() - started
            else:
                self._took.pop(ref, None)

    async def _recompute(self, ref: ObjectRef) -> bool:
        dirty = self._recount.pop(ref, None)  # also None when the key is retried: every cluster then
        engine = self.placement.engine
        info = self.placement.object_info(ref)
        if info is None or not engine.selecting(ref):
            # Not recorded: gone, or in a space with no EdgePlacement any more (placement records no object there).
            await self._remove(ref, deleted=info is None and await self.placement.find_object_info(ref) is None)
            return False
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            return False
        obj = await self.objects.find(ref.space, rtype, ref.namespace, ref.name)
        if obj is None:
            await self._remove(ref, deleted=True)
            return False
        tally = self._tallies.get(ref)
        if tally is None:
            tally = self._tallies[ref] = Tally()
            dirty = None
        involved = Involved(ref.space, rtype.kind, rtype.api_version, ref.namespace, ref.name,
                            str(obj["metadata"].get("uid", "")))
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        shares = self.placement.copies.shares(ref)  # divided replicas: each cluster is asked for its share
        targets = engine.object_destinations(ref)
        leaving = engine.leaving_targets(ref)  # clusters keeping their copy until the move is done
        if dirty is not None and not tally.holds(targets, leaving):
            dirty = None  # its clusters changed without a drain telling (a move let a leaving copy go, began one)
        if dirty is None:
            reports = self.reports.of(ref)
            await self._tell_placement(ref, involved, targets + leaving)
            for gone in set(tally.rows).difference(targets, leaving):
                tally.remove(gone)
            for t in targets:
                tally.put(t, self._row(ref, rtype.kind, spec, shares, t, reports.get(t), leaving=False))
            for t in leaving:
                tally.put(t, self._row(ref, rtype.kind, spec, shares, t, reports.get(t), leaving=True))
            await self._tell_reports(ref, involved, targets + leaving, reports)
            self._track(ref, frozenset(targets + leaving))
        else:
            reports = {}
            for t in sorted(dirty):
                held = tally.rows.get(t)
                if held is None:
                    continue  # a report that came before its cluster was placed: the cluster is not the object's
                report = self.reports.get(ref, t)
                tally.put(t, self._row(ref, rtype.kind, spec, shares, t, report, leaving=held.leaving))
                if report is not None:
                    reports[t] = report
            await self._tell_reports(ref, involved, sorted(reports), reports)
        await self._write(ref, obj, rtype, tally)
        await self.combined.update(ref, obj, rtype, engine.status_wants(ref), self.reports.of(ref))
        return False

    def _row(self, ref: ObjectRef, kind: str, spec: dict[str, Any], shares: dict[str, int] | None, target: str,
             report: Report | None, *, leaving: bool) -> Row:
        """``target``'s state and entry as of now."""
        if leaving:  # a leaving copy runs what it was last sent: its own replicas, any revision
            asked = spec if shares is None else {**spec, "replicas": _own_replicas(report)}
            state = cluster_state(kind, asked, report, stale=not self._healthy(target),
                                  current_revision=report.applied_revision if report is not None else None)
            return cluster_row(target, state, report, leaving=True, share=None, number=None)
        share = None if shares is None else shares.get(target, 0)
        state = cluster_state(kind, spec if share is None else {**spec, "replicas": share}, report,
                              current_revision=self.placement.content_revision(ref, target),
                              stale=not self._healthy(target), copy_error=self.placement.copy_error(ref, target))
        return cluster_row(target, state, report, leaving=False, share=share,
                           number=self.placement.rollout_revision(ref, target))

    def leaving(self) -> list[tuple[ObjectRef, str]]:
        """Every (object, cluster) a stored PlacementStatus shows ``Leaving``: the moves under way when the hub
        stopped."""
        return sorted((ref, str(c.get("name"))) for ref, body in self._bodies.items()
                      for c in body.get("clusters") or [] if c.get("phase") == "Leaving")

    def copy_ready(self, ref: ObjectRef, target: str) -> bool | None:
        """Whether ``target``'s copy of ``ref`` is Ready, as its PlacementStatus (the stored one, which every hub
        process follows) says; None when the object's kind has no readiness rule and its replicas are not divided
        (what a move waits for: divided replicas of any kind wait for their new shares, as a drain always did)."""
        info = self.placement.object_info(ref)
        if info is None or (info["kind"] not in KINDS_WITH_READINESS and not self.placement.copies.divided(ref)):
            return None
        body = self._bodies.get(ref) or {}
        if (body.get("object") or {}).get("revision") != self.placement.object_revision(ref):
            return False  # written before the object's latest change: it cannot say the cluster runs that
        shares = self.placement.copies.shares(ref)
        return any(c.get("name") == target and c.get("phase") == "Ready" and
                   (shares is None or c.get("replicas") == shares.get(target, 0))  # the share it must run now
                   for c in body.get("clusters") or [])

    def _healthy(self, target: str) -> bool:
        return self.inventory.ready(target) is not False

    async def _tell_placement(self, ref: ObjectRef, involved: Involved, targets: list[str]) -> None:
        """Events for the clusters the object was placed on and removed from, and its copies' problems."""
        before = self._targets_of.get(ref, frozenset())
        # Recorded together (each cluster's Event is its own): an object placed on or taken off a fleet at once
        # would otherwise wait for one commit per cluster.
        placed, removed = sorted(set(targets) - before), sorted(before - set(targets))
        await asyncio.gather(
            *(self.events.record(involved, "Normal", "Placed", f"placed on cluster {t}", host=t) for t in placed),
            *(self.events.record(involved, "Normal", "Removed", f"removed from cluster {t}", host=t) for t in removed))
        for target in removed:
            self._seen.pop((ref, target), None)
            self._copy_told.pop((ref, target), None)
            if target in self._refused.get(ref, ()):
                self._refused[ref].discard(target)
                for key in self.placement.engine.selecting(ref):
                    self.placement.refresh_status(*key)
        await self._tell_copy_problems(ref, involved, targets)

    async def _tell_reports(self, ref: ObjectRef, involved: Involved, targets: list[str],
                            reports: dict[str, Report]) -> None:
        """Events for what these clusters' reports say that was not told yet: apply failures, drift."""
        for target in targets:
            report = reports.get(target)
            if report is None:
                continue
            error, drift, told = self._seen.get((ref, target), (None, 0, frozenset()))
            if report.error and report.error != error:
                reason = next((r for r in _APPLY_REASONS if report.error.startswith(f"{r}:")), "ApplyFailed")
                await self.events.record(involved, "Warning", reason,
                                         f"apply failed on cluster {target}: {report.error}", host=target)
            fresh = [d for d in report.drift if (str(d.get("path")), str(d.get("time"))) not in told]
            for change in fresh:
                await self.events.record(involved, "Warning", "DriftCorrected" if change.get("corrected") else "Drift",
                                         _drift_message(change, target), host=target)
            if report.drift_corrections > drift and not fresh:
                await self.events.record(involved, "Warning", "DriftCorrected",
                                         f"changed in cluster {target} and put back "
                                         f"({report.drift_corrections} times)", host=target)
            refused = self._refused.get(ref, set())
            if bool(report.error and report.error.startswith(f"{NOT_ADOPTED}:")) != (target in refused):
                refused ^= {target}
                if refused:
                    self._refused[ref] = refused
                else:
                    self._refused.pop(ref, None)
                for key in self.placement.engine.selecting(ref):
                    self.placement.refresh_status(*key)
            self._seen[(ref, target)] = (report.error, report.drift_corrections,
                                         frozenset((str(d.get("path")), str(d.get("time"))) for d in report.drift))

    def refusals(self, space: str, name: str) -> list[dict[str, Any]]:
        """The EdgePlacement's ``NotAdopted`` condition: selected objects some cluster already has, made by
        somebody else, which the syncer therefore left alone."""
        refused = []
        for ref in self.placement.engine.selected_objects(space, name):
            clusters = sorted(self._refused.get(ref, ()))
            if clusters:
                where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
                refused.append(f"{ref.resource} {where} on {', '.join(clusters)}")
        if not refused:
            return []
        more = f"; and {len(refused) - SHOWN_REFUSALS} more" if len(refused) > SHOWN_REFUSALS else ""
        return [{"type": "NotAdopted", "status": "True", "reason": NOT_ADOPTED,
                 "message": "the clusters already have objects spacehub did not make, left as they are (annotate "
                            "the space's object spacehub.io/adopt=true to take them over): "
                            + "; ".join(refused[:SHOWN_REFUSALS]) + more}]

    async def _tell_copy_problems(self, ref: ObjectRef, involved: Involved, targets: list[str]) -> None:
        """Warning Events when a cluster's customized copy cannot be made or uses parameters it lacks, and
        when another space places a different copy of the same object on a cluster (on both objects)."""
        problems = self.placement.copies.problems(ref)
        conflicts: dict[str, list[str]] = {}
        for conflict in self.placement.copies.conflicts.of(ref):
            conflicts.setdefault(conflict.target, []).append(conflict.describe())
        # Only clusters with a problem now or told of one before can need an Event (not every cluster, each time).
        concerned = {t for r, t in self._copy_told if r == ref} | set(conflicts)
        if problems is not None:
            concerned |= problems.errors.keys() | problems.unknown.keys()
        for target in targets:
            if target not in concerned:
                continue
            error = problems.errors.get(target) if problems is not None else None
            unknown = problems.unknown.get(target, frozenset()) if problems is not None else frozenset()
            conflict = "; ".join(conflicts.get(target, [])) or None
            told = self._copy_told.get((ref, target), (None, frozenset(), None))
            if error is not None and error != told[0]:
                await self.events.record(involved, "Warning", "CustomizationFailed",
                                         f"cluster {target} keeps its previous copy: {error}", host=target)
            if unknown and unknown != told[1]:
                await self.events.record(involved, "Warning", "UnknownParameter",
                                         f"cluster {target} defines no {', '.join(sorted(unknown))}: left as written",
                                         host=target)
            if conflict is not None and conflict != told[2]:
                await self.events.record(involved, "Warning", "ConflictingPlacement", conflict, host=target)
            if error is None and not unknown and conflict is None:
                self._copy_told.pop((ref, target), None)
            else:
                self._copy_told[(ref, target)] = (error, unknown, conflict)

    async def _write(self, ref: ObjectRef, obj: dict[str, Any], rtype: ResourceType, tally: Tally) -> None:
        meta = obj["metadata"]
        header = {"group": ref.group, "resource": ref.plural, "kind": rtype.kind, "namespace": ref.namespace,
                  "name": ref.name, "uid": str(meta.get("uid", "")), "generation": int(meta.get("generation") or 0),
                  "revision": self.placement.object_revision(ref) or ""}
        written = tally.written_object
        if not tally.unwritten and written is not None and \
                (written == header or (not tally.ready and _identity(written) == _identity(header))):
            return  # nothing a user sees changed (a new revision of the object alone vouches for nothing Ready)
        body = tally.body(header)
        self._bodies[ref] = body
        namespace = ref.namespace or REPORT_NAMESPACE
        if not ref.namespace:
            await self.objects.ensure_namespace(ref.space, REPORT_NAMESPACE, MANAGER)
        owner = {"apiVersion": rtype.api_version, "kind": rtype.kind, "name": ref.name, "uid": meta.get("uid", "")}
        stype = self._type(ref.space)
        name = summary_name(ref)
        opts = WriteOptions(manager=MANAGER, field_validation="Ignore")
        current = await self.objects.find(ref.space, stype, namespace, name)
        if current is None:
            document = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PlacementStatus",
                        "metadata": {"name": name, "namespace": namespace, "labels": _labels(ref),
                                     **({"ownerReferences": [owner]} if ref.namespace else {})}, **body}
            done = await self._quietly(self.objects.create(ref.space, stype, namespace, document, opts))
        elif all(current.get(k) == v for k, v in body.items()):
            done = True
        else:
            def replace(doc: dict[str, Any]) -> dict[str, Any]:
                doc.update(body)
                return doc

            done = await self._quietly(self.objects.guaranteed_update(ref.space, stype, namespace, name, replace,
                                                                      opts))
        if done:
            tally.unwritten = False
            tally.written_object = header

    async def _quietly(self, write: Any) -> bool:
        """Whether the summary was written; one that cannot be (its namespace is being deleted) waits for the next
        trigger."""
        try:
            await write
        except StatusError as exc:
            if exc.code == 409 and exc.reason == "AlreadyExists":
                raise  # a concurrent create: retry the whole object
            log.info("placement summary not written: %s", exc)
            return False
        return True

    async def _remove(self, ref: ObjectRef, *, deleted: bool) -> None:
        """No placement selects the object (or it is gone): its summary goes too."""
        if ref not in self._targets_of:
            return
        stype = self._type(ref.space)
        await self.objects.delete_if_present(ref.space, stype, ref.namespace or REPORT_NAMESPACE, summary_name(ref))
        self._track(ref, None)
        self._bodies.pop(ref, None)
        self._tallies.pop(ref, None)
        await self.combined.forget(ref)
        for key in [k for k in self._seen if k[0] == ref]:
            del self._seen[key]
        for key in [k for k in self._copy_told if k[0] == ref]:
            del self._copy_told[key]
        self._refused.pop(ref, None)
        if deleted:
            self.events.forget(ref.space, ref.namespace, ref.name)

    def _track(self, ref: ObjectRef, targets: frozenset[str] | None) -> None:
        if targets is not None and self._targets_of.get(ref) == targets:
            return  # the same clusters (every change of the object): nothing to move in the reverse index
        for target in self._targets_of.get(ref, frozenset()):
            on = self._objects_on.get(target)
            if on is not None:
                on.discard(ref)
                if not on:
                    del self._objects_on[target]
        if targets is None:
            self._targets_of.pop(ref, None)
            return
        self._targets_of[ref] = targets
        for target in targets:
            self._objects_on.setdefault(target, set()).add(ref)

    def _type(self, space: str) -> ResourceType:
        rtype = self.catalog.by_group_resource(space, RESOURCE)
        assert rtype is not None
        return rtype

    def summary(self, ref: ObjectRef) -> dict[str, Any] | None:
        """The summary last written for ``ref`` (``summary``, ``worstCondition``, ``clusters``), or None."""
        body = self._bodies.get(ref)
        return None if body is None else {k: v for k, v in body.items() if k != "object"}


def _labels(ref: ObjectRef) -> dict[str, str]:
    """Labels to find a summary by its object (names of any length are cut to a label value's 63)."""
    values = {"group": ref.group or "core", "resource": ref.plural, "name": ref.name}
    return {f"{GROUP}/{key}": values[key][:63].strip("-_.") or "x" for key in OBJECT_LABELS}


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    """The ``object`` part of a summary without what changes with the object's content."""
    return {k: v for k, v in obj.items() if k not in ("generation", "revision")}


def _drift_message(change: dict[str, Any], target: str) -> str:
    manager = change.get("manager") or "an unknown field manager"
    outcome = "put back" if change.get("corrected") else "left as it is (drift mode ReportOnly)"
    return f"{change.get('path')} changed in cluster {target} by {manager}; {outcome}"


def _own_replicas(report: Report | None) -> int:
    """The replicas a cluster's copy asks for, as it reports them (a leaving divided copy keeps its old share)."""
    replicas = ((report.status if report is not None else None) or {}).get("replicas")
    return replicas if isinstance(replicas, int) else 0
