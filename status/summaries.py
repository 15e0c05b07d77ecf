"""The built-in summary of every placed object: a PlacementStatus in its space, and the Events of its story.

For each object an EdgePlacement selects, one ``PlacementStatus`` (``status.spacehub.io/v1alpha1``) in the
object's namespace (``spacehub-report`` for cluster-scoped objects) says how many clusters it is placed on
and how many of them applied it, run it ready, failed it or went stale, the worst state with its cluster,
and every cluster's state (``status.readiness``) with what the workload owns there. It is owned by the
object (garbage-collected with it) and deleted when no placement selects the object any more.

Recomputed when a report arrives, when placement changes the object's destinations, and when a cluster's
syncer stops or resumes sending heartbeats; coalesced: a burst of reports on one object makes one write,
at most ``DELAY`` seconds after the first. The same pass records the story as Events on the object:
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
from apiserver.service import Objects, WriteOptions
from apiserver.watch import Entry
from inventory.clusters import Inventory
from kubeclient.workqueue import Gate, WorkQueue
from placement.model import ObjectRef
from placement.service import PlacementService
from status.combined import COLLECTORS, CombinedStatuses
from status.readiness import KINDS_WITH_READINESS, ClusterState, cluster_state, worst
from status.reports import Report, ReportStore

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

    def schedule(self, ref: ObjectRef) -> None:
        """Recompute ``ref``'s summary soon (the first trigger waits ``DELAY`` for others to join it)."""
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
                continue
            if key.resource == COLLECTORS:
                for ref in self.combined.users(key.space, key.name):
                    self.schedule(ref)
                continue
            ref = ObjectRef(key.space, key.resource, key.namespace, key.name)
            if ref in self._targets_of:
                self.schedule(ref)

    def on_cluster_health(self, target: str) -> None:
        """A cluster went stale or came back: every object summarised on it changes."""
        for ref in list(self._objects_on.get(target, ())):
            self.schedule(ref)

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
        engine = self.placement.engine
        info = self.placement.object_info(ref)
        if info is None or not engine.selecting(ref):
            await self._remove(ref, deleted=info is None)
            return False
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            return False
        obj = await self.objects.find(ref.space, rtype, ref.namespace, ref.name)
        if obj is None:
            await self._remove(ref, deleted=True)
            return False
        targets = engine.object_destinations(ref)
        leaving = engine.leaving_targets(ref)  # clusters keeping their copy until the move is done
        revision = self.placement.object_revision(ref)
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        reports = self.reports.of(ref)
        shares = self.placement.copies.shares(ref)  # divided replicas: each cluster is asked for its share
        states = {t: cluster_state(rtype.kind, spec if shares is None else {**spec, "replicas": shares.get(t, 0)},
                                   reports.get(t), current_revision=self.placement.content_revision(ref, t),
                                   stale=not self._healthy(t), copy_error=self.placement.copy_error(ref, t))
                  for t in targets}
        for t in leaving:  # a leaving copy runs what it was last sent: its own replicas, any revision
            report = reports.get(t)
            asked = spec if shares is None else {**spec, "replicas": _own_replicas(report)}
            states[t] = cluster_state(rtype.kind, asked, report, stale=not self._healthy(t),
                                      current_revision=report.applied_revision if report is not None else None)
        involved = Involved(ref.space, rtype.kind, rtype.api_version, ref.namespace, ref.name,
                            str(obj["metadata"].get("uid", "")))
        await self._tell_story(ref, involved, targets + leaving, states, reports)
        numbers = {t: self.placement.rollout_revision(ref, t) for t in targets}
        await self._write(ref, obj, rtype, revision, states, reports, shares, set(leaving), numbers)
        await self.combined.update(ref, obj, rtype, engine.status_wants(ref), reports)
        self._track(ref, frozenset(targets + leaving))
        return False

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

    async def _tell_story(self, ref: ObjectRef, involved: Involved, targets: list[str],
                          states: dict[str, ClusterState], reports: dict[str, Report]) -> None:
        before = self._targets_of.get(ref, frozenset())
        for target in sorted(set(targets) - before):
            await self.events.record(involved, "Normal", "Placed", f"placed on cluster {target}", host=target)
        for target in sorted(before - set(targets)):
            await self.events.record(involved, "Normal", "Removed", f"removed from cluster {target}", host=target)
            self._seen.pop((ref, target), None)
            self._copy_told.pop((ref, target), None)
            if target in self._refused.get(ref, ()):
                self._refused[ref].discard(target)
                for key in self.placement.engine.selecting(ref):
                    self.placement.refresh_status(*key)
        await self._tell_copy_problems(ref, involved, targets)
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
        for target in targets:
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

    async def _write(self, ref: ObjectRef, obj: dict[str, Any], rtype: ResourceType, revision: str | None,
                     states: dict[str, ClusterState], reports: dict[str, Report],
                     shares: dict[str, int] | None, leaving: set[str], numbers: dict[str, int | None]) -> None:
        meta = obj["metadata"]
        body = _summary(ref, rtype, meta, revision, states, reports, shares, leaving, numbers)
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
            await self._quietly(self.objects.create(ref.space, stype, namespace, document, opts))
            return
        if all(current.get(k) == v for k, v in body.items()):
            return

        def replace(doc: dict[str, Any]) -> dict[str, Any]:
            doc.update(body)
            return doc

        await self._quietly(self.objects.guaranteed_update(ref.space, stype, namespace, name, replace, opts))

    async def _quietly(self, write: Any) -> None:
        """A summary that cannot be written (its namespace is being deleted) waits for the next trigger."""
        try:
            await write
        except StatusError as exc:
            if exc.code == 409 and exc.reason == "AlreadyExists":
                raise  # a concurrent create: retry the whole object
            log.info("placement summary not written: %s", exc)

    async def _remove(self, ref: ObjectRef, *, deleted: bool) -> None:
        """No placement selects the object (or it is gone): its summary goes too."""
        if ref not in self._targets_of:
            return
        stype = self._type(ref.space)
        await self.objects.delete_if_present(ref.space, stype, ref.namespace or REPORT_NAMESPACE, summary_name(ref))
        self._track(ref, None)
        self._bodies.pop(ref, None)
        await self.combined.forget(ref)
        for key in [k for k in self._seen if k[0] == ref]:
            del self._seen[key]
        for key in [k for k in self._copy_told if k[0] == ref]:
            del self._copy_told[key]
        self._refused.pop(ref, None)
        if deleted:
            self.events.forget(ref.space, ref.namespace, ref.name)

    def _track(self, ref: ObjectRef, targets: frozenset[str] | None) -> None:
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


def _summary(ref: ObjectRef, rtype: ResourceType, meta: dict[str, Any], revision: str | None,
             states: dict[str, ClusterState], reports: dict[str, Report],
             shares: dict[str, int] | None, leaving: set[str], numbers: dict[str, int | None]) -> dict[str, Any]:
    """``numbers``: each cluster's revision number of the object (None: not recorded)."""
    # A leaving copy counts only among the ready (while it is): the fleet still runs it.
    placed = {t: s for t, s in states.items() if t not in leaving}
    phases = [s.phase for s in placed.values()]
    summary = {"targeted": len(placed), "applied": sum(p in ("Applied", "Ready") for p in phases),
               "ready": [s.phase for s in states.values()].count("Ready"), "failed": phases.count("Failed"),
               "stale": phases.count("Stale"), "pending": phases.count("Pending"),
               "current": sum(s.current for s in placed.values()), "leaving": len(leaving)}
    clusters = []
    for target in sorted(states):
        state, report = states[target], reports.get(target)
        entry: dict[str, Any] = {"name": target, "phase": "Leaving" if target in leaving else state.phase,
                                 "current": state.current}
        if target in leaving:
            entry["ready"] = state.phase == "Ready"
        if shares is not None and target not in leaving:
            entry["replicas"] = shares.get(target, 0)
        if numbers.get(target) is not None:
            entry["revision"] = numbers[target]
        if state.message:
            entry["message"] = state.message
        if report is not None:
            entry["reportedAt"] = report.reported_at
            if report.drift_corrections:
                entry["driftCorrections"] = report.drift_corrections
            if report.associated:
                entry["associated"] = report.associated
            if report.drift:
                entry["drift"] = list(report.drift)
        clusters.append(entry)
    body: dict[str, Any] = {
        "object": {"group": ref.group, "resource": ref.plural, "kind": rtype.kind, "namespace": ref.namespace,
                   "name": ref.name, "uid": str(meta.get("uid", "")), "generation": int(meta.get("generation") or 0),
                   "revision": revision or ""},
        "summary": summary, "clusters": clusters, "worstCondition": {}}
    bad = worst(placed)
    if bad is not None:
        cluster, state = bad
        condition = state.condition or {}
        body["worstCondition"] = {"cluster": cluster, "phase": state.phase, "message": state.message,
                                  **{k: str(condition[k]) for k in ("type", "status", "reason") if condition.get(k)}}
    return body


def _drift_message(change: dict[str, Any], target: str) -> str:
    manager = change.get("manager") or "an unknown field manager"
    outcome = "put back" if change.get("corrected") else "left as it is (drift mode ReportOnly)"
    return f"{change.get('path')} changed in cluster {target} by {manager}; {outcome}"


def _own_replicas(report: Report | None) -> int:
    """The replicas a cluster's copy asks for, as it reports them (a leaving divided copy keeps its old share)."""
    replicas = ((report.status if report is not None else None) or {}).get("replicas")
    return replicas if isinstance(replicas, int) else 0
