"""Placing pods on simulated nodes, and their IP addresses.

:class:`Scheduler` is kube-scheduler reduced to what a simulation needs: a pod may go to a Ready,
schedulable node whose labels match its ``nodeSelector``, whose taints it tolerates and whose
allocatable pods/cpu/memory still cover its requests; among those, nodes are taken round-robin.
Choices are reserved until the pod's write is acknowledged (the cache counts it from then on), so
concurrent workers never overcommit a node. :class:`PodIPs` hands out addresses from each node's
``podCIDR`` (lowest free first), and takes them back when the pod goes away.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections import Counter
from collections.abc import Iterator
from typing import Any

from apiserver.store import Key
from sim.controllers.cache import ClusterCache, NodeKey
from sim.controllers.util import Obj, Requests, condition, dicts, get, labels, node_allocatable, pod_requests


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


class Scheduler:
    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self._next: dict[str, int] = {}
        self._reserved: dict[NodeKey, Requests] = {}

    def _fit(self, key: NodeKey, node: Obj, requests: Requests) -> str | None:
        used = self.cache.requested.get(key, Requests()) + self._reserved.get(key, Requests())
        room = node_allocatable(node) - used
        if requests.pods > room.pods:
            return "Too many pods"
        if requests.cpu_milli > room.cpu_milli:
            return "Insufficient cpu"
        if requests.memory > room.memory:
            return "Insufficient memory"
        return None

    def pick(self, space: str, spec: Any) -> tuple[str | None, str]:
        """A node for a pod with ``spec`` (round-robin among those it fits), or None and why not."""
        requests = pod_requests(spec)
        nodes = self.cache.nodes(space)
        fitting: list[str] = []
        reasons: Counter[str] = Counter()
        for node in nodes:
            name = str(get(node, "metadata", "name"))
            why = self._why(space, name, node, spec, requests)
            if why is None:
                fitting.append(name)
            else:
                reasons[why] += 1
        if not fitting:
            detail = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
            return None, f"0/{len(nodes)} nodes are available" + (f": {detail}." if detail else ".")
        turn = self._next.get(space, 0)
        self._next[space] = turn + 1
        return fitting[turn % len(fitting)], ""

    def _why(self, space: str, name: str, node: Obj, spec: Any, requests: Requests) -> str | None:
        ready = condition(node, "Ready")
        if ready is None or ready.get("status") != "True":
            return "node(s) were not ready"
        if get(node, "spec", "unschedulable") is True:
            return "node(s) were unschedulable"
        selector = get(spec, "nodeSelector")
        node_labels = labels(node)
        if isinstance(selector, dict) and any(node_labels.get(k) != v for k, v in selector.items()):
            return "node(s) didn't match Pod's node affinity/selector"
        tolerations = dicts(get(spec, "tolerations"))
        for taint in dicts(get(node, "spec", "taints")):
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
        return self._fit((space, name), node, requests)

    @contextlib.contextmanager
    def reserve(self, space: str, spec: Any) -> Iterator[tuple[str | None, str]]:
        """Pick a node and hold its share until the block (the pod's write) is over."""
        node, why = self.pick(space, spec)
        requests = pod_requests(spec)
        key = (space, node or "")
        if node is not None:
            self._reserved[key] = self._reserved.get(key, Requests()) + requests
        try:
            yield node, why
        finally:
            if node is not None:
                left = self._reserved[key] - requests
                if left == Requests():
                    del self._reserved[key]
                else:
                    self._reserved[key] = left


class PodIPs:
    def __init__(self) -> None:
        self._by_pod: dict[Key, str] = {}
        self._used: dict[NodeKey, set[str]] = {}
        self._node_of: dict[Key, NodeKey] = {}

    def load(self, cache: ClusterCache) -> None:
        for key, pod in list(cache.objects.items()):
            ip, node = get(pod, "status", "podIP"), get(pod, "spec", "nodeName")
            if key.resource == "pods" and isinstance(ip, str) and ip and isinstance(node, str) and node \
                    and not get(pod, "spec", "hostNetwork"):
                self._take(key, (key.space, node), ip)

    def _take(self, key: Key, node: NodeKey, ip: str) -> None:
        self._by_pod[key] = ip
        self._node_of[key] = node
        self._used.setdefault(node, set()).add(ip)

    def assign(self, key: Key, node: Obj) -> str | None:
        """The pod's address on ``node`` (the same one on every call until released)."""
        if key in self._by_pod:
            return self._by_pod[key]
        cidr = get(node, "spec", "podCIDR")
        if not isinstance(cidr, str):
            return None
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        node_key = (key.space, str(get(node, "metadata", "name")))
        used = self._used.get(node_key, set())
        for i, host in enumerate(network.hosts()):
            if i == 0:
                continue  # the first address is the node's bridge
            if str(host) not in used:
                self._take(key, node_key, str(host))
                return str(host)
        return None

    def release(self, key: Key) -> None:
        ip = self._by_pod.pop(key, None)
        node = self._node_of.pop(key, None)
        if ip is not None and node is not None:
            self._used.get(node, set()).discard(ip)
