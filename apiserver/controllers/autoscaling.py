"""What kube's HorizontalPodAutoscaler (autoscaling/v2) decides and reports, for a measured CPU use.

Shared by the simulator's in-cluster HPA controller (``sim.controllers.hpa``) and the hub's fleet autoscaler
(``placement.autoscaling``), which differ only in what they measure and what they scale. ``load`` is the CPU the
target's ready pods use together, in percent of one pod's CPU request (``250``: two and a half pods' worth). Their
average utilisation is ``load / ready``, and kube's formula ``ceil(ready * utilisation / target)`` is
``ceil(load / target)``, bounded by ``minReplicas`` (default 1) and ``maxReplicas``; within kube's 10% tolerance
of the target the replicas stay. Only the ``cpu`` ``Utilization`` metric is computed (80% when ``metrics`` is
empty). There is no stabilisation window and no rate limit: the recommendation is taken as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from apimachinery.nested import get
from apiserver.controllers.conditions import new_condition, set_condition
from apiserver.writeoptions import now_rfc3339

Obj = dict[str, Any]
DEFAULT_UTILIZATION = 80
TOLERANCE = 0.1


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def cpu_target(hpa: Obj) -> int | None:
    """The target average CPU utilisation (percent of request), or None if the HPA asks only for other metrics."""
    metrics = get(hpa, "spec", "metrics")
    if not metrics:
        return DEFAULT_UTILIZATION
    for metric in metrics if isinstance(metrics, list) else []:
        if get(metric, "type") == "Resource" and get(metric, "resource", "name") == "cpu" \
                and get(metric, "resource", "target", "type") == "Utilization":
            return _int(get(metric, "resource", "target", "averageUtilization"), DEFAULT_UTILIZATION)
    return None


@dataclass(frozen=True)
class Recommendation:
    replicas: int  # what the target should have
    utilization: int | None  # the ready pods' average, None without metrics
    active: tuple[str, str, str]  # ScalingActive (status, reason, message)
    limited: tuple[str, str, str]  # ScalingLimited


def no_metrics(replicas: int, why: str) -> Recommendation:
    return Recommendation(replicas, None, ("False", "FailedGetResourceMetric", "the HPA was unable to compute the "
                                           f"replica count: failed to get cpu utilization: {why}"),
                          ("False", "DesiredWithinRange", ""))


def recommend(hpa: Obj, replicas: int, ready: int, load: float | None, *, no_load: str = "no metrics") -> \
        Recommendation:
    """What kube's HPA decides for a target at ``replicas`` whose ``ready`` pods use ``load`` (None: not measured,
    for the reason ``no_load``)."""
    if replicas == 0:
        return Recommendation(0, None, ("False", "ScalingDisabled", "scaling is disabled since the replica count "
                                        "of the target is zero"), ("False", "DesiredWithinRange", ""))
    target = cpu_target(hpa)
    if target is None or target <= 0:
        return Recommendation(replicas, None, ("False", "FailedGetResourceMetric", "only the cpu Utilization "
                                               "metric is computed"), ("False", "DesiredWithinRange", ""))
    if load is None:
        return no_metrics(replicas, no_load)
    if ready == 0:
        return no_metrics(replicas, "did not receive metrics for targeted pods (pods might be unready)")
    utilization = load / ready
    wanted = replicas if abs(utilization / target - 1) <= TOLERANCE else math.ceil(ready * utilization / target)
    low, high = _int(get(hpa, "spec", "minReplicas"), 1), _int(get(hpa, "spec", "maxReplicas"), 1)
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


def _base(hpa: Obj, current_replicas: int) -> Obj:
    status: Obj = {"observedGeneration": _int(get(hpa, "metadata", "generation"), 1),
                   "currentReplicas": current_replicas,
                   "desiredReplicas": _int(get(hpa, "status", "desiredReplicas"), 0)}
    if get(hpa, "status", "lastScaleTime"):
        status["lastScaleTime"] = get(hpa, "status", "lastScaleTime")
    return status


def status_after(hpa: Obj, current_replicas: int, rec: Recommendation, *, rescaled: bool) -> Obj:
    """The HPA's status once ``rec`` is acted on (``rescaled``: the target's replicas were changed)."""
    status = {**_base(hpa, current_replicas), "desiredReplicas": rec.replicas}
    if rec.utilization is not None:
        status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": rec.utilization}}}]
    if rescaled:
        status["lastScaleTime"] = now_rfc3339()
        able = new_condition("AbleToScale", "True", "SucceededRescale",
                             f"the HPA controller was able to update the target scale to {rec.replicas}")
    else:
        able = new_condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
    conditions = list(get(hpa, "status", "conditions") or [])
    for cond in (able, new_condition("ScalingActive", *rec.active), new_condition("ScalingLimited", *rec.limited)):
        conditions = set_condition(conditions, cond)
    return {**status, "conditions": conditions}


def status_unable(hpa: Obj, reason: str, message: str) -> Obj:
    """The HPA's status when it cannot get or act on its target (``AbleToScale`` False)."""
    conditions = set_condition(list(get(hpa, "status", "conditions") or []),
                               new_condition("AbleToScale", "False", reason, message))
    return {**_base(hpa, 0), "conditions": conditions}
