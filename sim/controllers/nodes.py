"""Simulated nodes: the ones each cluster starts with, and a kubelet's status for every Node.

At startup each cluster gets its configured number of nodes ``<cluster>-node-<i>`` with the usual
well-known labels, a pod CIDR and status (capacity and allocatable from the cluster's node shape,
conditions Ready and no pressure, addresses, node info); surplus simulated nodes from an earlier run
are deleted and changed shapes rewritten. Nodes a client creates are given a pod CIDR and the same
kind of status (kwok's node stage). A status a client wrote with a Ready condition (a node marked
NotReady for a test) is left alone.
"""

from __future__ import annotations

import asyncio
import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

from apiserver.store import Key
from apiserver.writeoptions import now_rfc3339
from sim.controllers.base import Context, Controller
from sim.controllers.cache import NODES
from sim.controllers.util import Obj, condition, deleting, get, labels, meta

SIMULATED_LABEL = "sim.spacehub.io/simulated"
# Node i gets the i-th /24 of the pod network and the i-th address after the node network's gateway.
POD_NETWORK = ipaddress.IPv4Network("10.64.0.0/10")
NODE_GATEWAY = ipaddress.IPv4Address("172.18.0.1")
MAX_NODES = 2 ** (24 - POD_NETWORK.prefixlen) - 1
ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass(frozen=True)
class NodeShape:
    """What the nodes of one cluster look like."""

    count: int = 2
    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"

    @property
    def instance_type(self) -> str:
        return f"sim-{self.cpu}cpu-{self.memory}".lower()

    def resources(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "pods": self.pods, "ephemeral-storage": "100Gi"}


def node_name(cluster: str, index: int) -> str:
    return f"{cluster}-node-{index}"


def _cidr(index: int) -> str:
    return f"{POD_NETWORK.network_address + (index << 8)}/24"


def _cidr_index(node: Obj) -> int | None:
    cidr = get(node, "spec", "podCIDR")
    try:
        network = ipaddress.IPv4Network(str(cidr), strict=False)
    except ValueError:
        return None
    if not network.subnet_of(POD_NETWORK):
        return None
    return (int(network.network_address) - int(POD_NETWORK.network_address)) >> 8


def _internal_ip(index: int) -> str:
    return str(NODE_GATEWAY + index)


def _condition(kind: str, status: str, reason: str, message: str, old: Obj | None) -> Obj:
    now = now_rfc3339()
    since = old["lastTransitionTime"] if old and old.get("status") == status and old.get("lastTransitionTime") \
        else now
    return {"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": since,
            "reason": reason, "message": message}


class NodeController(Controller):
    watches = (NODES,)
    manager = "kubelet"

    def __init__(self, ctx: Context, shapes: dict[str, NodeShape], default_shape: NodeShape) -> None:
        super().__init__(ctx, "nodes")
        self.shapes = shapes
        self.default_shape = default_shape

    def shape(self, space: str) -> NodeShape:
        return self.shapes.get(space, self.default_shape)

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if new is not None and not deleting(new) and self._needs_status(key.space, new):
            self.add(key)

    def _needs_status(self, space: str, node: Obj) -> bool:
        if get(node, "spec", "podCIDR") is None or condition(node, "Ready") is None:
            return True
        return labels(node).get(SIMULATED_LABEL) == "true" and \
            get(node, "status", "allocatable") != self.shape(space).resources()

    async def ensure(self, cluster: str) -> None:
        """Create the cluster's missing nodes and delete surplus simulated ones."""
        shape = self.shape(cluster)
        wanted = {node_name(cluster, i): i for i in range(1, shape.count + 1)}
        present = {str(meta(n).get("name")): n for n in self.cache.nodes(cluster)}
        await asyncio.gather(*(self.create(cluster, NODES, "", self._node(cluster, name, index, shape))
                               for name, index in wanted.items() if name not in present))
        await self.delete_all(Key(cluster, NODES, "", name) for name, node in present.items()
                              if labels(node).get(SIMULATED_LABEL) == "true" and name not in wanted)

    @staticmethod
    def _node(cluster: str, name: str, index: int, shape: NodeShape) -> Obj:
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": ZONES[(index - 1) % len(ZONES)],
                "topology.kubernetes.io/region": "sim",
                "node.kubernetes.io/instance-type": shape.instance_type,
                SIMULATED_LABEL: "true"}},
            "spec": {"podCIDR": _cidr(index), "podCIDRs": [_cidr(index)], "providerID": f"sim://{cluster}/{name}"},
        }

    def _free_cidr_index(self, space: str) -> int:
        taken = {_cidr_index(n) for n in self.cache.nodes(space)}
        return next(i for i in range(1, MAX_NODES + 1) if i not in taken)

    async def handle(self, key: Any) -> bool:
        node = self.cache.get(key)
        if node is None or deleting(node) or not self._needs_status(key.space, node):
            return False
        if get(node, "spec", "podCIDR") is None:
            cidr = _cidr(self._free_cidr_index(key.space))

            def assign(obj: Obj) -> Obj:
                spec = obj.setdefault("spec", {})
                if spec.get("podCIDR") is None:
                    spec.update(podCIDR=cidr, podCIDRs=[cidr])
                return obj

            node = await self.update(key, assign)
            if node is None:
                return False
        simulated = labels(node).get(SIMULATED_LABEL) == "true"
        if condition(node, "Ready") is not None and not simulated:
            return False
        await self.write_status(key, node, self._status(key.space, node))
        return False

    def _status(self, space: str, node: Obj) -> Obj:
        shape = self.shape(space)
        name = str(meta(node).get("name"))
        old = get(node, "status") if isinstance(get(node, "status"), dict) else {}
        index = _cidr_index(node) or 0
        conditions = [
            _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory "
                       "available", condition(node, "MemoryPressure")),
            _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
                       condition(node, "DiskPressure")),
            _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available",
                       condition(node, "PIDPressure")),
            _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", condition(node, "Ready")),
        ]
        node_uid = str(meta(node).get("uid") or uuid.uuid4())
        info = old.get("nodeInfo") if isinstance(old.get("nodeInfo"), dict) else {}
        return {
            "capacity": shape.resources(),
            "allocatable": shape.resources(),
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": _internal_ip(index)},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": info.get("machineID") or node_uid.replace("-", ""),
                "systemUUID": info.get("systemUUID") or node_uid,
                "bootID": info.get("bootID") or str(uuid.uuid4()),
                "kernelVersion": "6.1.0-spacehub-sim", "osImage": "spacehub simulated node",
                "containerRuntimeVersion": "sim://1.0.0", "kubeletVersion": self.ctx.kubelet_version,
                "kubeProxyVersion": self.ctx.kubelet_version, "operatingSystem": "linux", "architecture": "amd64",
            },
        }


def node_internal_ip(node: Obj) -> str:
    for address in get(node, "status", "addresses") or []:
        if isinstance(address, dict) and address.get("type") == "InternalIP":
            return str(address.get("address", ""))
    return ""
