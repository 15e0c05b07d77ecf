"""Reported status on the workload objects themselves: KubeStellar's singleton and multi-cluster status.

For an object whose selecting EdgePlacements ask ``wantSingletonReportedState`` or
``wantMultiWECReportedState`` (each an OR over the placements), keeps the annotation
``kubestellar.io/executing-count`` equal to its number of destinations and its ``.status`` equal to:

* the one qualified cluster's reported status when exactly one cluster is qualified — the clusters reached
  through the placements asking for it, as KubeStellar's "qualified set";
* with several qualified clusters and multi-cluster status asked for, the aggregate of their statuses
  (``status.aggregate``: readiness counts min, unavailability max, conditions False-wins …);
* nothing otherwise (several clusters and only singleton status asked for, or none).

``observedGeneration`` says whether the clusters run the space's current content: it is the object's own
``metadata.generation`` when every qualified cluster reported the current content revision and has observed
it, one less otherwise — so ``kubectl rollout status`` in the space waits for every cluster. When no
placement asks any more, the annotation goes and the status written is cleared. Choices where KubeStellar
is silent are in docs/status.md. Writes only through the object service (manager ``spacehub-status``)
and only on change; never writes objects that never asked.

Objects are re-examined when placement reports a placement's selection or destinations changed, when a
report arrives, when a report is forgotten because the object left that cluster's desired set, and when
someone else rewrites an annotated object's count.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.service import Objects
from apiserver.store import LogRow
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from kubeclient.workqueue import Gate, WorkQueue
from placement.model import ObjectRef
from placement.service import PlacementService
from status.aggregate import aggregate
from status.reports import Report, ReportStore

log = logging.getLogger(__name__)

ANNOTATION = "kubestellar.io/executing-count"
MARKER = ANNOTATION.encode()  # in the stored JSON of every object carrying the annotation
MANAGER = "spacehub-status"
_KEEP = object()  # one destination that has not reported (yet): leave the copied status alone
# Kinds whose status the hub's own controllers write (namespace phase, CRD conditions): never copied.
HUB_STATUS = frozenset({"namespaces", "customresourcedefinitions.apiextensions.k8s.io"})


class ObjectStatus(WorkQueue):
    def __init__(self, service: PlacementService, objects: Objects, catalog: Catalog, reports: ReportStore) -> None:
        super().__init__("object-status")
        self.service = service
        self.objects = objects
        self.catalog = catalog
        self.reports = reports
        # Objects known to carry the annotation, with the count written (so that it is removed when singleton
        # is no longer wanted, and restored when someone else changes it).
        self._managed: dict[ObjectRef, str] = {}
        # Which cluster each copied status came from (in memory: unknown after a restart).
        self._copied_from: dict[ObjectRef, str] = {}

    def start(self, gate: Gate | None = None) -> None:
        self.service.drain_listeners.append(self.on_drained)
        self.objects.bus.add_listener(self.on_commit)
        super().start(gate)

    def load(self, rows: Iterable[LogRow]) -> None:
        """Find the objects an earlier hub process annotated (their placements may be gone meanwhile), among the
        live objects whose stored JSON holds :data:`MARKER` (read at start: ``apiserver.store.marked``)."""
        for row in rows:
            annotations = (orjson.loads(row.value).get("metadata") or {}).get("annotations") or {}
            if ANNOTATION in annotations:
                key = row.key
                ref = ObjectRef(key.space, key.resource, key.namespace, key.name)
                self._managed.setdefault(ref, str(annotations[ANNOTATION]))
                self.add(ref)

    # --- triggers --------------------------------------------------------------------------------

    def on_drained(self, placements: set[tuple[str, str]], targets: set[str]) -> None:
        engine = self.service.engine
        for key in placements:
            for ref in engine.selected_objects(*key):
                self.add(ref)
        # Objects a changed placement no longer selects: only annotated ones can need a write.
        spaces = {space for space, _ in placements}
        for ref in self._managed:
            if ref.space in spaces:
                self.add(ref)
        for target in targets:
            for ref in self.reports.refs_of(target):
                if not engine.is_destination(ref, target):
                    self.reports.drop(ref, target)
                    self.add(ref)

    def on_report(self, ref: ObjectRef) -> None:
        self.add(ref)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        if not self._managed:
            return
        for entry in entries:
            key = entry.row.key
            ref = ObjectRef(key.space, key.resource, key.namespace, key.name)
            count = self._managed.get(ref)
            if count is not None and not entry.row.deleted and \
                    ((entry.obj().get("metadata") or {}).get("annotations") or {}).get(ANNOTATION) != count:
                self.add(ref)

    # --- reconciling one object ------------------------------------------------------------------

    async def handle(self, ref: Any) -> bool:
        assert isinstance(ref, ObjectRef)
        engine = self.service.engine
        if await self.service.find_object_info(ref) is None:  # gone (or never a workload object)
            self._forget(ref)
            return False
        wants = engine.status_wants(ref)
        wanted = wants.singleton or wants.multi
        if not wanted and ref not in self._managed:
            return False
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            return False
        obj = await self.objects.find(ref.space, rtype, ref.namespace, ref.name)
        if obj is None:
            self._forget(ref)
            return False
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if wanted:
            count = str(len(engine.object_destinations(ref)))
            status = self._status_for(ref, obj, wants.singleton_targets, wants.multi_targets if wants.multi else None)
            self._managed[ref] = count
            if annotations.get(ANNOTATION) != count:
                await self._write(ref, rtype, "", lambda o: _annotate(o, count))
        else:
            self._managed.pop(ref, None)
            if ANNOTATION in annotations:
                await self._write(ref, rtype, "", lambda o: _annotate(o, None))
            self._copied_from.pop(ref, None)
            status = None
        if status is None:
            # Nothing reported: the status the object was created with, never none at all for a built-in kind,
            # whose clients (the Python client's models, say) expect the field as kube always serializes it.
            status = rtype.strategy.initial_status(obj)
        if status is not _KEEP and "status" in rtype.subresources and ref.resource not in HUB_STATUS and \
                obj.get("status") != status:
            await self._write(ref, rtype, "status", lambda o: _set_status(o, status))
        return False

    def _status_for(self, ref: ObjectRef, obj: dict[str, Any], singleton: frozenset[str],
                    multi: frozenset[str] | None) -> Any:
        """The status the workload object must have, or ``_KEEP``. ``multi`` is None when no placement asks
        for multi-cluster status."""
        qualified = sorted(singleton | multi) if multi is not None else sorted(singleton)
        if len(qualified) == 1:
            cluster = qualified[0]
            report = self.reports.get(ref, cluster)
            if report is not None:
                self._copied_from[ref] = cluster
                return self._with_generation(ref, obj, report.status, {cluster: report}, qualified)
            if self._copied_from.get(ref, cluster) != cluster:
                del self._copied_from[ref]  # the object moved: the other cluster's status is stale
                return None
            return _KEEP
        self._copied_from.pop(ref, None)
        if multi is None or not qualified:
            return None
        reports = {c: r for c, r in self.reports.of(ref).items() if c in qualified}
        combined = aggregate([reports[c].status for c in sorted(reports)], divided=self.service.copies.divided(ref))
        return self._with_generation(ref, obj, combined, reports, qualified)

    def _with_generation(self, ref: ObjectRef, obj: dict[str, Any], status: dict[str, Any] | None,
                         reports: dict[str, Report], qualified: list[str]) -> dict[str, Any] | None:
        """``status`` with ``observedGeneration`` in the space's terms: the object's generation when every
        qualified cluster runs the current content and has observed it, one less otherwise."""
        if status is None or not any("observedGeneration" in (r.status or {}) for r in reports.values()):
            return status
        generation = int((obj.get("metadata") or {}).get("generation") or 0)
        if not generation:
            return status
        current = len(reports) == len(qualified) and \
            all(_runs(r, self.service.content_revision(ref, target)) for target, r in reports.items())
        if not current and any(r.applied_revision is None for r in reports.values()) and len(reports) == 1:
            return status  # a syncer that does not say what it runs: its own view, as before
        return {**status, "observedGeneration": generation if current else generation - 1}

    async def _write(self, ref: ObjectRef, rtype: Any, subresource: str, compute: Any) -> None:
        try:
            await self.objects.guaranteed_update(ref.space, rtype, ref.namespace, ref.name, compute,
                                                 WriteOptions(manager=MANAGER, field_validation="Ignore"),
                                                 subresource=subresource)
        except StatusError as exc:
            if exc.code == 404:
                self._forget(ref)
            elif 400 <= exc.code < 500 and exc.code != 409:
                # Refused (a cluster's status the schema rejects, an admission policy): log it, never retry
                # it forever; the next trigger tries again.
                log.warning("singleton status of %s not written: %s", ref, exc)
            else:
                raise

    def _forget(self, ref: ObjectRef) -> None:
        self._managed.pop(ref, None)
        self._copied_from.pop(ref, None)


def _annotate(obj: dict[str, Any], count: str | None) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if count is None:
        annotations.pop(ANNOTATION, None)
    else:
        annotations[ANNOTATION] = count
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return obj


def _set_status(obj: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    obj["status"] = status
    return obj


def _runs(report: Report, revision: str | None) -> bool:
    """Whether a cluster runs the current content and its controllers have observed it."""
    if revision is None or report.applied_revision != revision:
        return False
    observed = (report.status or {}).get("observedGeneration")
    return observed is None or report.generation is None or int(observed) >= int(report.generation)
