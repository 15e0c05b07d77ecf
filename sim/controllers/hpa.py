"""HorizontalPodAutoscalers (autoscaling/v2): scale Deployments, ReplicaSets and StatefulSets to a simulated load.

Nothing runs in a simulated cluster, so there is no CPU use to measure: the load is a knob of the cluster,
``cpuLoad`` (``PUT /sim/v1/clusters/<name>/faults``), the total CPU each HPA's target uses in that cluster, in
percent of one pod's CPU request (``250``: two and a half pods' worth, whatever the replica count). The target's
ready pods share it evenly (as :mod:`sim.metrics` reports), and kube's decision
(:mod:`apiserver.controllers.autoscaling`) follows: ``ceil(cpuLoad / target)`` within min and max. CPU requests are
not checked.

The controller writes the target's replicas through its ``scale`` subresource with kube's field manager
``horizontal-pod-autoscaler``, and the HPA's status as kube does (``currentReplicas``, ``desiredReplicas``,
``currentMetrics``, ``lastScaleTime``, conditions ``AbleToScale``, ``ScalingActive``, ``ScalingLimited``). It looks
again when the HPA, its target or the cluster's load changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apiserver.controllers.autoscaling import recommend, status_after, status_unable
from apiserver.store import Key
from sim.controllers.base import Context, Controller
from sim.controllers.cache import DEPLOYMENTS, HPAS, REPLICASETS, STATEFULSETS
from sim.controllers.util import Obj, as_int, deleting, get

HPA_MANAGER = "horizontal-pod-autoscaler"
SCALABLE = {("apps", "Deployment"): DEPLOYMENTS, ("apps", "ReplicaSet"): REPLICASETS,
            ("apps", "StatefulSet"): STATEFULSETS}
_TARGET_RESOURCES = frozenset(SCALABLE.values())


def target_key(space: str, hpa: Obj) -> Key | None:
    """The object ``spec.scaleTargetRef`` names, if it is a kind the simulator scales."""
    ref = get(hpa, "spec", "scaleTargetRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return None
    resource = SCALABLE.get((str(ref.get("apiVersion") or "").rpartition("/")[0], str(ref.get("kind"))))
    if resource is None:
        return None
    return Key(space, resource, str(get(hpa, "metadata", "namespace") or ""), str(ref["name"]))


class HorizontalPodAutoscalerController(Controller):
    watches = (HPAS, *_TARGET_RESOURCES)
    manager = HPA_MANAGER

    def __init__(self, ctx: Context, load: Callable[[str], float | None]) -> None:
        super().__init__(ctx, "horizontalpodautoscalers")
        self.load = load  # cluster -> its cpuLoad knob (None: not set)

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == HPAS:
            if new is not None:
                self.add(key)
            return
        for hpa_key, hpa in self.cache.all(key.space, HPAS):
            if target_key(key.space, hpa) == key:
                self.add(hpa_key)

    def load_changed(self, cluster: str) -> None:
        for hpa_key in self.cache.keys(cluster, HPAS):
            self.add(hpa_key)

    async def handle(self, key: Any) -> bool:
        hpa = self.cache.get(key)
        if hpa is None or deleting(hpa):
            return False
        target = target_key(key.space, hpa)
        scaled = self.cache.get(target) if target is not None else None
        if target is None or scaled is None:
            ref = get(hpa, "spec", "scaleTargetRef") or {}
            await self.write_status(key, hpa, status_unable(
                hpa, "FailedGetScale", "the HPA controller was unable to get the target's current scale: "
                f"{ref.get('kind')} {ref.get('name')!r} is not found or not scalable in the simulator"))
            return False
        replicas = as_int(get(scaled, "spec", "replicas"), 1)
        rec = recommend(hpa, replicas, as_int(get(scaled, "status", "readyReplicas")), self.load(key.space),
                        no_load="the cluster has no cpuLoad")
        if rec.replicas != replicas:
            await self.update(target, lambda obj: _with_replicas(obj, rec.replicas), subresource="scale")
        await self.write_status(key, hpa, status_after(hpa, as_int(get(scaled, "status", "replicas")), rec,
                                                       rescaled=rec.replicas != replicas))
        return False


def _with_replicas(obj: Obj, replicas: int) -> Obj:
    obj.setdefault("spec", {})["replicas"] = replicas
    return obj
