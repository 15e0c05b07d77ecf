"""ReplicaSets: keep ``spec.replicas`` active pods, and report them in status.

Missing pods are created from the template as ``<rs>-<5 random>`` with a controller reference and a
node from the scheduler; surplus pods are deleted in upstream's order of preference (unbound before
bound, pending before running, not ready before ready, newest first). Status carries ``replicas``,
``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (honouring ``minReadySeconds``) and
``observedGeneration``, with zero counts omitted as Go omits them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.store import Key
from sim.controllers.base import BURST, Context, Controller
from sim.controllers.cache import PODS, REPLICASETS
from sim.controllers.util import (
    Obj,
    as_int,
    available_in,
    deleting,
    generation,
    get,
    labels,
    omit_zero,
    phase,
    pod_active,
    pod_ready,
)

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pods: list[tuple[Key, Obj]]) -> list[tuple[Key, Obj]]:
    """Pods in the order a controller scaling down deletes them (``ActivePods`` sort)."""
    newest_first = sorted(pods, key=lambda kp: str(get(kp[1], "metadata", "creationTimestamp") or ""), reverse=True)
    return sorted(newest_first, key=lambda kp: (bool(get(kp[1], "spec", "nodeName")),
                                                _PHASE_RANK.get(phase(kp[1]), 1), pod_ready(kp[1])))


def pod_counts(pods: list[Obj], template_labels: dict[str, Any], min_ready: int) -> tuple[Obj, float | None]:
    """(replicas, fullyLabeled, ready, available) counts, and when to look again for availability."""
    fully = ready = available = 0
    recheck: float | None = None
    for pod in pods:
        pod_labels = labels(pod)
        if all(pod_labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        wait = available_in(pod, min_ready)
        if wait is None:
            continue
        ready += 1
        if wait == 0:
            available += 1
        else:
            recheck = wait if recheck is None else min(recheck, wait)
    return {"replicas": len(pods), "fullyLabeledReplicas": fully, "readyReplicas": ready,
            "availableReplicas": available}, recheck


class ReplicaSetController(Controller):
    watches = (REPLICASETS, PODS)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "replicasets")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == REPLICASETS:
            if new is not None:
                self.add(key)
            return
        self.enqueue_owner(key, new or old or {}, "ReplicaSet", REPLICASETS)

    async def handle(self, key: Any) -> bool:
        rs = self.cache.get(key)
        if rs is None or deleting(rs):
            return False
        spec = rs.get("spec") or {}
        pods = [(k, p) for k, p in self.cache.owned(rs, PODS) if pod_active(p)]
        diff = as_int(spec.get("replicas"), 1) - len(pods)
        name = str(rs["metadata"]["name"])
        if diff > 0:
            await asyncio.gather(*(self.create_pod(key.space, rs, spec.get("template"), generate_name=f"{name}-")
                                   for _ in range(min(diff, BURST))))
        elif diff < 0:
            await self.delete_all(k for k, _ in deletion_order(pods)[:-diff])
        rs = self.cache.get(key)
        if rs is None:
            return False
        active = [p for _, p in self.cache.owned(rs, PODS) if pod_active(p)]
        template_labels = get(rs, "spec", "template", "metadata", "labels")
        counts, recheck = pod_counts(active, template_labels if isinstance(template_labels, dict) else {},
                                     as_int(get(rs, "spec", "minReadySeconds")))
        status = {**counts, "observedGeneration": generation(rs)}
        conditions = get(rs, "status", "conditions")
        if conditions:
            status["conditions"] = conditions
        await self.write_status(key, rs, omit_zero(status, "fullyLabeledReplicas", "readyReplicas",
                                                   "availableReplicas"))
        if recheck is not None:
            self.add_after(key, recheck)
        return False
