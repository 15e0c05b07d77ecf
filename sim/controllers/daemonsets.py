"""DaemonSets: one pod on every node the pod template selects, rolling updates, and status.

A node is eligible when its labels match the template's ``nodeSelector`` and the pod tolerates its
``NoSchedule``/``NoExecute`` taints (with the tolerations upstream adds to daemon pods). Pods are bound
directly (``spec.nodeName``) and labelled ``controller-revision-hash`` and ``pod-template-generation``;
extra pods on a node, pods on nodes no longer eligible and finished pods are deleted. ``RollingUpdate``
replaces outdated pods while fewer than ``maxUnavailable`` are unavailable. Status counts are
upstream's (``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberReady``, ``numberAvailable``,
``updatedNumberScheduled``, ``numberMisscheduled``, ``numberUnavailable``, ``observedGeneration``).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from apiserver.store import Key
from sim.controllers.base import BURST, Context, Controller
from sim.controllers.cache import DAEMONSETS, NODES, PODS
from sim.controllers.replicasets import deletion_order
from sim.controllers.scheduler import tolerates
from sim.controllers.util import (
    REVISION_HASH,
    Obj,
    as_int,
    available_in,
    deleting,
    dicts,
    generation,
    get,
    labels,
    meta,
    omit_zero,
    pod_active,
    scaled,
    template_hash,
)

TEMPLATE_GENERATION = "pod-template-generation"
# What the daemon set controller adds to every daemon pod (``AddOrUpdateDaemonPodTolerations``).
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def daemon_tolerations(spec: Any) -> list[Obj]:
    own = dicts(get(spec, "tolerations"))
    present = {(t.get("key"), t.get("effect")) for t in own}
    return own + [copy.deepcopy(t) for t in DAEMON_TOLERATIONS if (t["key"], t["effect"]) not in present]


def eligible(node: Obj, spec: Any) -> bool:
    selector = get(spec, "nodeSelector")
    node_labels = labels(node)
    if isinstance(selector, dict) and any(node_labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations = daemon_tolerations(spec)
    return all(tolerates(tolerations, taint) for taint in dicts(get(node, "spec", "taints"))
               if taint.get("effect") in ("NoSchedule", "NoExecute"))


class DaemonSetController(Controller):
    watches = (DAEMONSETS, PODS, NODES)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "daemonsets")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == DAEMONSETS:
            if new is not None:
                self.add(key)
        elif key.resource == NODES:
            for ds in self.cache.keys(key.space, DAEMONSETS):
                self.add(ds)
        else:
            self.enqueue_owner(key, new or old or {}, "DaemonSet", DAEMONSETS)

    async def handle(self, key: Any) -> bool:
        ds = self.cache.get(key)
        if ds is None or deleting(ds):
            return False
        spec = ds.get("spec") or {}
        template = spec.get("template")
        pod_hash = template_hash(template)
        nodes = {str(meta(n).get("name")): n for n in self.cache.nodes(key.space)}
        wanted = {name for name, node in nodes.items() if eligible(node, get(template, "spec"))}
        by_node: dict[str, list[tuple[Key, Obj]]] = {}
        doomed: list[Key] = []
        for pod_key, pod in self.cache.owned(ds, PODS):
            if deleting(pod):
                continue
            node = str(get(pod, "spec", "nodeName") or "")
            if not pod_active(pod) or node not in wanted:
                doomed.append(pod_key)
            else:
                by_node.setdefault(node, []).append((pod_key, pod))
        for pods in by_node.values():
            # Keep the oldest pod of a node; the others are extra.
            doomed += [k for k, _ in deletion_order(pods)[:-1]]
        await self.delete_all(doomed)
        if self.namespace_active(key.space, key.namespace):
            extra = {REVISION_HASH: pod_hash, TEMPLATE_GENERATION: str(generation(ds))}
            patch = {"tolerations": daemon_tolerations(get(template, "spec"))}
            await asyncio.gather(*(self.create_pod(key.space, ds, template, generate_name=f"{key.name}-", node=node,
                                                   labels=extra, spec_patch=patch)
                                   for node in sorted(wanted - set(by_node))[:BURST]))
        if get(spec, "updateStrategy", "type") == "RollingUpdate":
            await self._roll(ds, wanted, pod_hash)
        ds = self.cache.get(key) or ds
        status, recheck = self._status(ds, wanted, pod_hash)
        await self.write_status(key, ds, status)
        if recheck is not None:
            self.add_after(key, recheck)
        return False

    def _current(self, ds: Obj) -> dict[str, Obj]:
        return {str(get(p, "spec", "nodeName")): p for _, p in self.cache.owned(ds, PODS)
                if pod_active(p) and get(p, "spec", "nodeName")}

    async def _roll(self, ds: Obj, wanted: set[str], pod_hash: str) -> None:
        min_ready = as_int(get(ds, "spec", "minReadySeconds"))
        pods = {node: (k, p) for k, p in self.cache.owned(ds, PODS) if pod_active(p)
                for node in [str(get(p, "spec", "nodeName") or "")] if node in wanted}
        budget = scaled(get(ds, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable") or 1, len(wanted), True)
        unavailable = sum(1 for node in wanted if node not in pods or available_in(pods[node][1], min_ready) != 0)
        outdated = [kp for kp in pods.values() if labels(kp[1]).get(REVISION_HASH) != pod_hash]
        room = max(0, max(budget, 1) - unavailable)
        # Outdated pods that are unavailable anyway go at once: replacing them costs no availability.
        healthy = [k for k, p in outdated if available_in(p, min_ready) == 0]
        unhealthy = [k for k, p in outdated if available_in(p, min_ready) != 0]
        await self.delete_all(unhealthy + healthy[:room])

    def _status(self, ds: Obj, wanted: set[str], pod_hash: str) -> tuple[Obj, float | None]:
        min_ready = as_int(get(ds, "spec", "minReadySeconds"))
        current = self._current(ds)
        scheduled = [p for node, p in current.items() if node in wanted]
        waits = [w for w in (available_in(p, min_ready) for p in scheduled) if w is not None]
        available = sum(1 for w in waits if w == 0)
        status = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": sum(1 for node in current if node not in wanted),
            "desiredNumberScheduled": len(wanted),
            "numberReady": len(waits),
            "observedGeneration": generation(ds),
            "updatedNumberScheduled": sum(1 for p in scheduled if labels(p).get(REVISION_HASH) == pod_hash),
            "numberAvailable": available,
            "numberUnavailable": len(wanted) - available,
        }
        return omit_zero(status, "updatedNumberScheduled", "numberAvailable", "numberUnavailable"), min(
            (w for w in waits if w > 0), default=None)
