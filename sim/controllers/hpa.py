"""HorizontalPodAutoscalers (autoscaling/v2): scale Deployments, ReplicaSets and StatefulSets to a simulated load.

Nothing runs in a simulated cluster, so there is no CPU use to measure: the load is a knob of the cluster,
``cpuLoad`` (``PUT /sim/v1/clusters/<name>/faults``), the total CPU each HPA's target uses in that cluster, in
percent of one pod's CPU request (``250``: two and a half pods' worth, whatever the replica count). The target's
ready pods share it evenly, so their average utilisation is ``cpuLoad / ready`` and kube's formula
``ceil(ready * utilisation / target)`` is ``ceil(cpuLoad / target)``, bounded by ``minReplicas`` (default 1) and
``maxReplicas``; within kube's 10% tolerance of the target the replicas stay. Only the ``cpu`` ``Utilization``
metric is computed (the default, 80%, when ``metrics`` is empty); CPU requests are not checked.

The controller writes the target's replicas through its ``scale`` subresource with kube's field manager
``horizontal-pod-autoscaler``, and the HPA's status as kube does (``currentReplicas``, ``desiredReplicas``,
``currentMetrics``, ``lastScaleTime``, conditions ``AbleToScale``, ``ScalingActive``, ``ScalingLimited``). It looks
again when the HPA, its target or the cluster's load changes; it scales straight to the recommendation (no
stabilisation window, no rate limits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiserver.service import now_rfc3339
from apiserver.store import Key
from sim.controllers.base import Context, Controller
from sim.controllers.cache import DEPLOYMENTS, HPAS, REPLICASETS, STATEFULSETS
from sim.controllers.util import Obj, as_int, deleting, generation, get, new_condition, set_condition

HPA_MANAGER = "horizontal-pod-autoscaler"
DEFAULT_UTILIZATION = 80
TOLERANCE = 0.1
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


def cpu_target(hpa: Obj) -> int | None:
    """The target average CPU utilisation (percent of request), or None if the HPA asks only for other metrics."""
    metrics = get(hpa, "spec", "metrics")
    if not metrics:
        return DEFAULT_UTILIZATION
    for metric in metrics if isinstance(metrics, list) else []:
        if get(metric, "type") == "Resource" and get(metric, "resource", "name") == "cpu" \
                and get(metric, "resource", "target", "type") == "Utilization":
            return as_int(get(metric, "resource", "target", "averageUtilization"), DEFAULT_UTILIZATION)
    return None


@dataclass(frozen=True)
class Recommendation:
    replicas: int  # what the target should have
    utilization: int | None  # the ready pods' average, None without metrics
    active: tuple[str, str, str]  # ScalingActive (status, reason, message)
    limited: tuple[str, str, str]  # ScalingLimited


def recommend(hpa: Obj, replicas: int, ready: int, load: float | None) -> Recommendation:
    """What kube's HPA would decide for a target at ``replicas`` with ``ready`` pods sharing ``load``."""
    if replicas == 0:
        return Recommendation(0, None, ("False", "ScalingDisabled", "scaling is disabled since the replica count "
                                        "of the target is zero"), ("False", "DesiredWithinRange", ""))
    target = cpu_target(hpa)
    if target is None or target <= 0:
        return Recommendation(replicas, None, ("False", "FailedGetResourceMetric", "the simulator computes only the "
                                               "cpu Utilization metric (from the cluster's cpuLoad)"),
                              ("False", "DesiredWithinRange", ""))
    if load is None or ready == 0:
        why = "the cluster has no cpuLoad" if load is None else "did not receive metrics for targeted pods (pods " \
              "might be unready)"
        return Recommendation(replicas, None, ("False", "FailedGetResourceMetric", "the HPA was unable to compute "
                                               f"the replica count: failed to get cpu utilization: {why}"),
                              ("False", "DesiredWithinRange", ""))
    utilization = load / ready
    wanted = replicas if abs(utilization / target - 1) <= TOLERANCE else math.ceil(ready * utilization / target)
    low, high = as_int(get(hpa, "spec", "minReplicas"), 1), as_int(get(hpa, "spec", "maxReplicas"), 1)
    active = ("True", "ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu "
              "resource utilization (percentage of request)")
    if wanted > high:
        return Recommendation(high, round(utilization), active, ("True", "TooManyReplicas", "the desired replica "
                                                                 "count is more than the maximum replica count"))
    if wanted < low:
        return Recommendation(low, round(utilization), active, ("True", "TooFewReplicas", "the desired replica "
                                                                "count is less than the minimum replica count"))
    return Recommendation(wanted, round(utilization), active, ("False", "DesiredWithinRange", "the desired count "
                                                              "is within the acceptable range"))


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
        conditions = list(get(hpa, "status", "conditions") or [])
        status: Obj = {"observedGeneration": generation(hpa), "currentReplicas": 0,
                       "desiredReplicas": as_int(get(hpa, "status", "desiredReplicas"))}
        if get(hpa, "status", "lastScaleTime"):
            status["lastScaleTime"] = get(hpa, "status", "lastScaleTime")
        target = target_key(key.space, hpa)
        scaled = self.cache.get(target) if target is not None else None
        if target is None or scaled is None:
            ref = get(hpa, "spec", "scaleTargetRef") or {}
            conditions = set_condition(conditions, new_condition(
                "AbleToScale", "False", "FailedGetScale", "the HPA controller was unable to get the target's current "
                f"scale: {ref.get('kind')} {ref.get('name')!r} is not found or not scalable in the simulator"))
            await self.write_status(key, hpa, {**status, "conditions": conditions})
            return False
        replicas = as_int(get(scaled, "spec", "replicas"), 1)
        rec = recommend(hpa, replicas, as_int(get(scaled, "status", "readyReplicas")), self.load(key.space))
        status["currentReplicas"] = as_int(get(scaled, "status", "replicas"))
        status["desiredReplicas"] = rec.replicas
        if rec.utilization is not None:
            status["currentMetrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": rec.utilization}}}]
        if rec.replicas != replicas:
            await self.update(target, lambda obj: _with_replicas(obj, rec.replicas), subresource="scale")
            status["lastScaleTime"] = now_rfc3339()
            able = new_condition("AbleToScale", "True", "SucceededRescale",
                                 f"the HPA controller was able to update the target scale to {rec.replicas}")
        else:
            able = new_condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        for cond in (able, new_condition("ScalingActive", *rec.active), new_condition("ScalingLimited", *rec.limited)):
            conditions = set_condition(conditions, cond)
        await self.write_status(key, hpa, {**status, "conditions": conditions})
        return False


def _with_replicas(obj: Obj, replicas: int) -> Obj:
    obj.setdefault("spec", {})["replicas"] = replicas
    return obj
