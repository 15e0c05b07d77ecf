"""Fleet autoscaling: a HorizontalPodAutoscaler in a space scales the fleet total of a divided workload.

An HPA (autoscaling/v2) in a workload space whose ``scaleTargetRef`` names an object there whose replicas are
divided (``spacehub.io/replica-division``) is evaluated by the hub, in the process holding the lease: the
measure is the CPU use of the workload's pods in every cluster its division gives replicas, read as
metrics-server serves it (``metrics.k8s.io/v1beta1`` PodMetrics of the namespace, the target's pod selector)
through each cluster's tunnel, over what the pod template requests. So the fleet's average utilisation is
``sum(usage) / (pods * request)``, and kube's decision (:mod:`apiserver.controllers.autoscaling`) gives the new
total; it is written to the object's ``spec.replicas`` through its ``scale`` subresource (field manager
``spacehub-fleet-autoscaler``), as ``kubectl scale`` would, and the division runs again. The HPA's status is kube's.

A cluster whose metrics cannot be read (no tunnel to this hub process, no metrics-server, an error) is left out of
the measure, named in the ``ScalingActive`` message; with none, nothing changes. Like kube, a target without a CPU
request cannot be measured. The HPA is looked at when it changes and every :data:`INTERVAL` seconds (kube's sync
period). The HPA itself is an object like any other: placed only if a placement selects it (then each cluster's
copy would scale that cluster's share as well, which is not what a fleet HPA is for).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from apimachinery import kubejsonpath
from apimachinery.errors import StatusError
from apimachinery.nested import get
from apimachinery.quantity import parse_quantity
from apiserver.catalog import Catalog
from apiserver.controllers.autoscaling import recommend, status_after, status_unable
from apiserver.resourcetypes import ResourceType, ScalePaths
from apiserver.scale import scale_of
from apiserver.service import Objects
from apiserver.spacepaths import ROOT
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from kubeclient.workqueue import Gate, WorkQueue
from placement.division import per_replica_requests
from placement.model import ObjectRef

log = logging.getLogger(__name__)

HPAS = "horizontalpodautoscalers.autoscaling"
MANAGER = "spacehub-fleet-autoscaler"
INTERVAL = 15.0  # seconds between measures of one HPA (kube's --horizontal-pod-autoscaler-sync-period)
Read = Callable[[str, str, str], Awaitable[tuple[int, Any]]]  # (cluster, path, query) -> (status, JSON body)
HpaKey = tuple[str, str, str]  # space, namespace, name


@dataclass
class Measure:
    """What the clusters reported: CPU use (millicores) of how many pods, and the clusters left out."""

    usage_milli: Decimal = Decimal(0)
    pods: int = 0
    missing: list[str] = field(default_factory=list)


def pod_usage(body: Any) -> tuple[Decimal, int]:
    """Summed CPU use (millicores) and number of the pods in a PodMetricsList."""
    items = body.get("items") if isinstance(body, dict) else None
    total, pods = Decimal(0), 0
    for item in items if isinstance(items, list) else []:
        pods += 1
        for container in get(item, "containers") or []:
            total += (parse_quantity(get(container, "usage", "cpu")) or Decimal(0)) * 1000
    return total, pods


class FleetAutoscaler(WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog, shares: Callable[[ObjectRef], dict[str, int] | None],
                 read: Read, workload_space: Callable[[str], bool], interval: float = INTERVAL) -> None:
        """``shares(ref)``: a divided object's replicas per cluster (None: not divided); ``read``: GET in a
        cluster through its tunnel; ``workload_space(space)``: whether objects there are placed."""
        super().__init__("fleet-autoscaler")
        self.objects = objects
        self.catalog = catalog
        self.shares = shares
        self.read = read
        self.workload_space = workload_space
        self.interval = interval
        self._due: set[HpaKey] = set()  # HPAs with a measure scheduled
        # The generation of each HPA last looked at: its own status writes (same generation) are not news.
        self._generations: dict[HpaKey, int] = {}

    def load(self) -> list[HpaKey]:
        """Every HPA there is (blocking: run it in a thread before :meth:`start`)."""
        return [(row.key.space, row.key.namespace, row.key.name) for row in self.objects.rows_of_resource(HPAS)]

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if key.resource != HPAS or not self.workload_space(key.space):
                continue
            hpa_key = (key.space, key.namespace, key.name)
            if entry.row.deleted:
                self._generations.pop(hpa_key, None)
            elif get(entry.obj(), "metadata", "generation") != self._generations.get(hpa_key):
                self.add(hpa_key)

    def start(self, gate: Gate | None = None, known: Sequence[HpaKey] = ()) -> None:
        self.objects.bus.add_listener(self.on_commit)
        super().start(gate)
        for key in known:
            if self.workload_space(key[0]):
                self.add(key)

    def _measure_later(self, key: HpaKey) -> None:
        if key in self._due:
            return
        self._due.add(key)

        def due() -> None:
            self._due.discard(key)
            self.add(key)

        asyncio.get_running_loop().call_later(self.interval, due)

    def _rtype(self, space: str, resource: str) -> ResourceType:
        rtype = self.catalog.by_group_resource(space, resource)
        assert rtype is not None, resource
        return rtype

    async def handle(self, key: Any) -> bool:
        space, namespace, name = key
        hpa_type = self._rtype(ROOT, HPAS)
        hpa = await self.objects.find(space, hpa_type, namespace, name)
        if hpa is None or get(hpa, "metadata", "deletionTimestamp"):
            return False
        self._measure_later(key)
        self._generations[key] = get(hpa, "metadata", "generation")
        status = await self._evaluate(space, namespace, hpa)
        if hpa.get("status") != status:
            def write(obj: dict[str, Any]) -> dict[str, Any]:
                obj["status"] = status
                return obj

            try:
                await self.objects.guaranteed_update(space, hpa_type, namespace, name, write,
                                                     WriteOptions(manager=MANAGER), subresource="status")
            except StatusError as exc:
                if exc.code != 404:
                    raise
        return False

    async def _evaluate(self, space: str, namespace: str, hpa: dict[str, Any]) -> dict[str, Any]:
        """Measure, scale the target if kube's decision says so, and return the HPA's new status."""
        ref = get(hpa, "spec", "scaleTargetRef") or {}
        group = str(get(ref, "apiVersion") or "").rpartition("/")[0]
        rtype = self.catalog.by_kind(space, group, str(get(ref, "kind")))
        target = None
        if rtype is not None and "scale" in rtype.subresources and get(ref, "name"):
            target = await self.objects.find(space, rtype, namespace, str(ref["name"]))
        if rtype is None or target is None:
            return status_unable(hpa, "FailedGetScale", "the HPA controller was unable to get the target's current "
                                 f"scale: {get(ref, 'kind')} {get(ref, 'name')!r} is not found or has no scale "
                                 "subresource")
        shares = self.shares(ObjectRef(space, rtype.group_resource, namespace, str(ref["name"])))
        if shares is None:
            return status_unable(hpa, "NotDivided", "the fleet autoscaler scales the fleet total of a workload "
                                 "whose replicas are divided among clusters (spacehub.io/replica-division); this "
                                 "one's are not")
        scale = scale_of(rtype, target)
        replicas = int(scale["spec"]["replicas"])
        request = per_replica_requests(target).get("cpu")
        if not request:
            rec = recommend(hpa, replicas, 0, None, no_load="missing request for cpu in the pod template")
        else:
            clusters = sorted(c for c, n in shares.items() if n > 0)
            measure = await self._measure(namespace, str(scale["status"]["selector"]), clusters)
            answered = len(measure.missing) < len(clusters)
            load = float(measure.usage_milli / (request * 1000) * 100) if answered else None
            missing = f" (no metrics from {', '.join(measure.missing)})" if measure.missing else ""
            rec = recommend(hpa, replicas, measure.pods, load, no_load=f"no cluster reported metrics{missing}")
            if missing and rec.active[0] == "True":  # measured without some clusters: say which
                rec = replace(rec, active=(*rec.active[:2], rec.active[2] + missing))
        if rec.replicas != replicas:
            wanted = rec.replicas

            def rescale(obj: dict[str, Any]) -> dict[str, Any]:
                kubejsonpath.set_value(obj, (rtype.scale or ScalePaths()).spec_replicas, wanted)
                return obj

            await self.objects.guaranteed_update(space, rtype, namespace, str(ref["name"]), rescale,
                                                 WriteOptions(manager=MANAGER), subresource="scale")
            log.info("fleet autoscaler %s/%s/%s: %s %s from %d to %d replicas", space, namespace,
                     get(hpa, "metadata", "name"), rtype.group_resource, ref["name"], replicas, wanted)
        return status_after(hpa, int(scale["status"]["replicas"]), rec, rescaled=rec.replicas != replicas)

    async def _measure(self, namespace: str, selector: str, clusters: list[str]) -> Measure:
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"
        query = urlencode({"labelSelector": selector}) if selector else ""
        answers = await asyncio.gather(*(self.read(c, path, query) for c in clusters), return_exceptions=True)
        measure = Measure()
        for cluster, answer in zip(clusters, answers, strict=True):
            if isinstance(answer, BaseException) or answer[0] != 200:
                measure.missing.append(cluster)
                continue
            usage, pods = pod_usage(answer[1])
            measure.usage_milli += usage
            measure.pods += pods
        return measure
