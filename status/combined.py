"""CombinedStatus: the StatusCollectors a placement's downsync tests name, evaluated over its clusters' reports.

For each (workload object, EdgePlacement) whose selecting downsync tests name ``statusCollectors``, one
CombinedStatus (``control.kubestellar.io/v1alpha1``, KubeStellar's shape and naming: ``<object
UID>.<placement UID>``, labelled ``status.kubestellar.io/{api-group, resource, namespace, name,
binding-policy}``) in the object's namespace (``spacehub-report`` for cluster-scoped objects), owned by the
object, with one result per collector (``status.collectors``) over the placement's clusters that hold the
object. A collector that does not exist (yet) gives no result. Written only when it changes; deleted when
no test names collectors for the pair any more. Recomputed with the object's summary (``status.summaries``)
and when a StatusCollector of the space changes.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions
from inventory.clusters import Inventory
from placement.model import ObjectRef, StatusWants
from placement.service import PlacementService
from status.collectors import ClusterRow, CollectorError, CompiledCollector, compile_collector, evaluate
from status.reports import Report

log = logging.getLogger(__name__)

GROUP = "control.kubestellar.io"
VERSION = "v1alpha1"
RESOURCE = f"combinedstatuses.{GROUP}"
COLLECTORS = f"statuscollectors.{GROUP}"
REPORT_NAMESPACE = "spacehub-report"
MANAGER = "spacehub-status"
LABEL = "status.kubestellar.io"


class CombinedStatuses:
    def __init__(self, placement: PlacementService, inventory: Inventory, objects: Objects, catalog: Catalog) -> None:
        self.placement = placement
        self.inventory = inventory
        self.objects = objects
        self.catalog = catalog
        self._written: dict[ObjectRef, set[str]] = {}  # object -> CombinedStatus names written for it
        self._uses: dict[tuple[str, str], set[ObjectRef]] = {}  # (space, collector) -> objects naming it
        self._compiled: dict[tuple[str, str], tuple[str, CompiledCollector | None]] = {}  # by resourceVersion

    def users(self, space: str, collector: str) -> list[ObjectRef]:
        """The objects whose CombinedStatus a change of this StatusCollector changes."""
        return list(self._uses.get((space, collector), ()))

    async def update(self, ref: ObjectRef, obj: dict[str, Any], rtype: ResourceType, wants: StatusWants,
                     reports: dict[str, Report]) -> None:
        for users in self._uses.values():
            users.discard(ref)
        wanted: set[str] = set()
        for (space, placement), names in wants.collectors:
            for name in names:
                self._uses.setdefault((space, name), set()).add(ref)
            placement_obj = self.placement.placement(space, placement)
            if placement_obj is None:
                continue
            doc_name = f"{obj['metadata'].get('uid', '')}.{placement_obj['metadata'].get('uid', '')}"
            wanted.add(doc_name)
            clusters = {d.sync_target_name for d in self.placement.engine.destinations(space, placement)}
            rows = [self._row(c, reports.get(c)) for c in sorted(clusters) if c in reports]
            results = []
            for name in names:
                collector = await self._collector(space, name)
                if collector is not None:
                    results.append(evaluate(collector, _without_status(obj), rows))
            await self._write(ref, obj, rtype, placement, doc_name, results)
        for stale in self._written.get(ref, set()) - wanted:
            await self._delete(ref, stale)
        self._written[ref] = wanted

    async def forget(self, ref: ObjectRef) -> None:
        for name in self._written.pop(ref, set()):
            await self._delete(ref, name)
        for users in self._uses.values():
            users.discard(ref)

    def _row(self, cluster: str, report: Report | None) -> ClusterRow:
        target = self.inventory.sync_target(cluster) or {}
        labels = {str(k): str(v) for k, v in ((target.get("metadata") or {}).get("labels") or {}).items()}
        return ClusterRow(cluster, labels, None if report is None else report.status,
                          None if report is None else report.reported_at)

    async def _collector(self, space: str, name: str) -> CompiledCollector | None:
        rtype = self.catalog.by_group_resource(space, COLLECTORS)
        if rtype is None:
            return None
        doc = await self.objects.find(space, rtype, "", name)
        if doc is None:
            self._compiled.pop((space, name), None)
            return None
        version = str(doc["metadata"].get("resourceVersion", ""))
        cached = self._compiled.get((space, name))
        if cached is None or cached[0] != version:
            try:
                compiled: CompiledCollector | None = compile_collector(doc.get("spec") or {}, name=name)
            except CollectorError as exc:  # written before a stricter check: treat as absent, say why
                log.info("status collector %s of space %s does not compile: %s", name, space, exc)
                compiled = None
            cached = (version, compiled)
            self._compiled[(space, name)] = cached
        return cached[1]

    async def _write(self, ref: ObjectRef, obj: dict[str, Any], rtype: ResourceType, placement: str, name: str,
                     results: list[dict[str, Any]]) -> None:
        namespace = ref.namespace or REPORT_NAMESPACE
        ctype = self.catalog.by_group_resource(ref.space, RESOURCE)
        assert ctype is not None
        labels = {f"{LABEL}/api-group": ref.group, f"{LABEL}/resource": ref.plural,
                  f"{LABEL}/namespace": ref.namespace, f"{LABEL}/name": ref.name,
                  f"{LABEL}/binding-policy": placement}
        labels = {k: v[:63].strip("-_.") for k, v in labels.items()}
        opts = WriteOptions(manager=MANAGER, field_validation="Ignore")
        current = await self.objects.find(ref.space, ctype, namespace, name)
        if current is None:
            owner = [{"apiVersion": rtype.api_version, "kind": rtype.kind, "name": ref.name,
                      "uid": obj["metadata"].get("uid", "")}] if ref.namespace else []
            document = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "CombinedStatus",
                        "metadata": {"name": name, "namespace": namespace, "labels": labels,
                                     **({"ownerReferences": owner} if owner else {})},
                        "results": results}
            try:
                await self.objects.create(ref.space, ctype, namespace, document, opts)
            except StatusError as created:
                log.info("combined status %s not written: %s", name, created)
            return
        if _same(current.get("results"), results):
            return

        def replace(doc: dict[str, Any]) -> dict[str, Any]:
            doc["results"] = results
            return doc

        try:
            await self.objects.guaranteed_update(ref.space, ctype, namespace, name, replace, opts)
        except StatusError as exc:
            log.info("combined status %s not written: %s", name, exc)

    async def _delete(self, ref: ObjectRef, name: str) -> None:
        ctype = self.catalog.by_group_resource(ref.space, RESOURCE)
        if ctype is None:
            return
        await self.objects.delete_if_present(ref.space, ctype, ref.namespace or REPORT_NAMESPACE, name)


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


def _same(a: Any, b: Any) -> bool:
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
