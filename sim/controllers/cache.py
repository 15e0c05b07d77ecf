"""The simulator's informer cache: the current pods, nodes and workloads of every cluster, in memory.

Loaded from the store at startup, then fed by the watch bus. The writer publishes a batch before it
acknowledges its writes, so a controller that awaited a write already sees it here: controllers need
no "expectations". Besides objects by key it keeps the indexes the controllers query: dependents by
controller-owner uid, keys by (space, resource), and what the active pods bound to each node request.
Cached objects are shared: callers must not mutate them.
"""

from __future__ import annotations

from collections.abc import Callable

from apiserver.store import Key, LogRow
from apiserver.watch import decode_object
from sim.controllers.util import Obj, Requests, controller_ref, get, pod_active, pod_requests, uid

PODS = "pods"
NODES = "nodes"
REPLICASETS = "replicasets.apps"
DEPLOYMENTS = "deployments.apps"
STATEFULSETS = "statefulsets.apps"
DAEMONSETS = "daemonsets.apps"
JOBS = "jobs.batch"
SERVICES = "services"
APISERVICES = "apiservices.apiregistration.k8s.io"
HPAS = "horizontalpodautoscalers.autoscaling"
CACHED = (PODS, NODES, REPLICASETS, DEPLOYMENTS, STATEFULSETS, DAEMONSETS, JOBS, SERVICES, APISERVICES, HPAS)

NodeKey = tuple[str, str]  # (space, node name)


class ClusterCache:
    def __init__(self) -> None:
        self.objects: dict[Key, Obj] = {}
        self._owned: dict[str, set[Key]] = {}  # controller uid → dependents
        self._owner_of: dict[Key, str] = {}
        self._by_kind: dict[tuple[str, str], set[Key]] = {}
        self._pod_node: dict[Key, NodeKey] = {}
        self._pod_requests: dict[Key, Requests] = {}
        self.requested: dict[NodeKey, Requests] = {}

    def load(self, rows_of_resource: Callable[[str], list[LogRow]]) -> None:
        """Read every cached kind with ``rows_of_resource`` (``Objects.rows_of_resource``: blocking; call at
        startup, before listening)."""
        for resource in CACHED:
            for row in rows_of_resource(resource):
                self.apply(row.key, decode_object(row), deleted=False)

    # --- updates --------------------------------------------------------------------------------

    def apply(self, key: Key, obj: Obj, *, deleted: bool) -> Obj | None:
        """Record a committed change; returns the previous object."""
        old = self.objects.pop(key, None) if deleted else self.objects.get(key)
        self._unindex(key)
        if not deleted:
            self.objects[key] = obj
            self._index(key, obj)
        return old

    def _unindex(self, key: Key) -> None:
        owner = self._owner_of.pop(key, None)
        if owner is not None:
            deps = self._owned.get(owner)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._owned[owner]
        kind = self._by_kind.get((key.space, key.resource))
        if kind is not None and key not in self.objects:
            kind.discard(key)
        node = self._pod_node.pop(key, None)
        if node is not None:
            self.requested[node] = self.requested[node] - self._pod_requests.pop(key)

    def _index(self, key: Key, obj: Obj) -> None:
        self._by_kind.setdefault((key.space, key.resource), set()).add(key)
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid"):
            self._owner_of[key] = ref["uid"]
            self._owned.setdefault(ref["uid"], set()).add(key)
        if key.resource == PODS:
            node_name = get(obj, "spec", "nodeName")
            if isinstance(node_name, str) and node_name and pod_active(obj):
                node = (key.space, node_name)
                requests = pod_requests(obj.get("spec"))
                self._pod_node[key] = node
                self._pod_requests[key] = requests
                self.requested[node] = self.requested.get(node, Requests()) + requests

    # --- queries --------------------------------------------------------------------------------

    def get(self, key: Key) -> Obj | None:
        return self.objects.get(key)

    def owned(self, owner: Obj, resource: str) -> list[tuple[Key, Obj]]:
        """Objects of ``resource`` whose controller is ``owner``."""
        keys = self._owned.get(uid(owner), ())
        return [(k, self.objects[k]) for k in list(keys) if k.resource == resource and k in self.objects]

    def keys(self, space: str, resource: str) -> list[Key]:
        return list(self._by_kind.get((space, resource), ()))

    def all(self, space: str, resource: str) -> list[tuple[Key, Obj]]:
        return [(k, self.objects[k]) for k in self.keys(space, resource) if k in self.objects]

    def nodes(self, space: str) -> list[Obj]:
        return sorted((obj for _, obj in self.all(space, NODES)), key=lambda n: str(get(n, "metadata", "name")))

    def node(self, space: str, name: str) -> Obj | None:
        return self.objects.get(Key(space, NODES, "", name))
