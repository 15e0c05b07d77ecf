"""The resource metrics API a simulated cluster serves (metrics-server's ``metrics.k8s.io/v1beta1`` PodMetrics).

Pods use no CPU in a simulation: the usage reported is the cluster's ``cpuLoad`` knob (:mod:`sim.faults`), the CPU
each workload (the Deployment, StatefulSet or ReplicaSet at the top of a pod's controller references) uses in that
cluster, in percent of one pod's CPU request (of one core when the pod requests none), shared evenly by the
workload's ready pods and, within a pod, by its containers. So the usage over the request of a workload's pods is
``cpuLoad / ready`` percent: what the simulated HPA controller (:mod:`sim.controllers.hpa`) computes and what a
hub reading these metrics measures. Only ready pods are listed (metrics-server lists the pods it has scraped);
without a ``cpuLoad`` the list is empty, as when metrics-server has no samples.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from apimachinery.selectors import LabelSelector
from apiserver.store import Key
from apiserver.writeoptions import now_rfc3339
from sim.controllers.cache import PODS, REPLICASETS, ClusterCache
from sim.controllers.util import Obj, controller_ref, get, labels, pod_ready, pod_requests

GROUP_VERSION = "metrics.k8s.io/v1beta1"
WINDOW = "15s"
ONE_CORE_MILLI = 1000


def _workload(cache: ClusterCache, key: Key, pod: Obj) -> str:
    """The uid of the controller at the top of the pod's chain (the pod's own name if it has none)."""
    ref = controller_ref(pod)
    if ref is None:
        return f"pod/{key.name}"
    if ref.get("kind") == "ReplicaSet":
        rs = cache.get(Key(key.space, REPLICASETS, key.namespace, str(ref.get("name"))))
        top = controller_ref(rs) if rs is not None else None
        if top is not None:
            return str(top.get("uid"))
    return str(ref.get("uid"))


def pod_metrics(cache: ClusterCache, cluster: str, namespace: str, selector: LabelSelector,
                cpu_load: float | None) -> dict[str, Any]:
    """The PodMetricsList of ``namespace``'s ready pods that ``selector`` matches."""
    ready = [(k, p) for k, p in cache.all(cluster, PODS) if k.namespace == namespace and pod_ready(p)]
    items: list[Obj] = []
    if cpu_load is not None:
        workloads = {k: _workload(cache, k, p) for k, p in ready}
        sharing = Counter(workloads.values())
        now = now_rfc3339()
        for key, pod in sorted(ready, key=lambda kp: kp[0].name):
            if not selector.matches(labels(pod)):
                continue
            request = pod_requests(pod.get("spec")).cpu_milli or ONE_CORE_MILLI
            usage = cpu_load / 100 * request / sharing[workloads[key]]
            containers = [c for c in get(pod, "spec", "containers") or [] if isinstance(c, dict)]
            items.append({
                "metadata": {"name": key.name, "namespace": namespace, "labels": labels(pod),
                             "creationTimestamp": now},
                "timestamp": now, "window": WINDOW,
                "containers": [{"name": str(c.get("name")), "usage": {
                    "cpu": f"{round(usage / len(containers))}m", "memory": "0"}} for c in containers]})
    return {"kind": "PodMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}
