"""The Pods a space stores: workload objects like any other, kept by the space API, placed by EdgePlacements.

``debug.http`` and ``debug.sockets`` serve a space's pods paths; what concerns the stored Pods goes through
here: whether one exists (a stored Pod keeps its plain name, a cluster's pod of that name is shown as
``<name>.<cluster>``), the space API that answers for them, and the cluster copy that a stored Pod's log,
exec, attach and port-forward reach.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from apimachinery.errors import bad_request
from apimachinery.fieldselectors import FieldSelector, parse_field_selector
from apimachinery.selectors import LabelSelector, parse_label_selector
from apiserver.api.handlers import SpaceAPI
from apiserver.listing import ListResult
from apiserver.resourcetypes import ResourceType
from debug.fleet import ClusterPods
from debug.naming import Obj
from placement.model import ObjectRef


class StoredPods:
    def __init__(self, space_api: Callable[[], SpaceAPI], pod_type: ResourceType, fleet: ClusterPods) -> None:
        self.space_api = space_api  # looked up per request: the hub builds it at startup
        self.pod_type = pod_type
        self.fleet = fleet

    async def get(self, space: str, namespace: str, name: str) -> Obj | None:
        return await self.space_api().objects.find(space, self.pod_type, namespace, name)

    async def forward(self, request: Request, space: str) -> Response:
        """The request answered by the space API, as for any stored kind (its own checks, errors and tables)."""
        rest = request.url.path.partition(f"/clusters/{space}/")[2]
        return await self.space_api().handle(request, space, rest)

    async def list(self, space: str, namespace: str | None, label_selector: str = "",
                   field_selector: str = "") -> ListResult:
        """The stored Pods of ``namespace`` (None: all) the selectors select, with the store's resourceVersion."""
        labels, fields = self.selectors(label_selector, field_selector)
        return await self.space_api().objects.list(space, self.pod_type, namespace, labels=labels, fields=fields)

    def selectors(self, label_selector: str, field_selector: str) -> tuple[LabelSelector | None,
                                                                           FieldSelector | None]:
        """The parsed selectors (None: none given); kube's 400 for a bad one."""
        labels = parse_label_selector(label_selector) if label_selector else None
        fields = parse_field_selector(field_selector, self.pod_type.strategy.selectable_fields) \
            if field_selector else None
        return labels, fields

    async def keys(self, space: str, namespace: str | None) -> set[tuple[str, str]]:
        """(namespace, name) of every stored Pod of ``namespace`` (None: all): the names clusters' pods yield."""
        listed = await self.list(space, namespace)
        return {(str(p["metadata"].get("namespace") or ""), str(p["metadata"]["name"])) for p in listed.items}

    async def target(self, space: str, namespace: str, shown: str, *, stored: bool | None = None) \
            -> tuple[str, set[str]]:
        """What a request reaching the pod shown as ``shown`` looks for in the clusters: the shown name (for a
        stored Pod, its copy's, :meth:`copy_name`) and the stored Pods' names it may be a copy of. ``stored``:
        whether ``shown`` is a stored Pod's name, when the request already looked (None: look now). A request
        that found no such Pod goes on as for a cluster's pod, even if the Pod is created meanwhile: asked
        again, its copy could be on several clusters, a 400 for a name the request never meant as a copy."""
        if stored is None:
            stored = await self.get(space, namespace, shown) is not None
        if stored:
            return self.copy_name(space, namespace, shown), {shown}
        base = shown.rpartition(".")[0]
        return shown, {base} if base and await self.get(space, namespace, base) is not None else set()

    def copy_name(self, space: str, namespace: str, name: str) -> str:
        """The shown name of the cluster copy of the stored Pod ``name``: ``<name>.<cluster>`` of the one cluster
        it is placed on; with none or several, a 400 saying why (with several, the client names the copy)."""
        engine = self.fleet.placement().engine
        ref = ObjectRef(space, "pods", namespace, name)
        clusters = [c for c in self.fleet.clusters(space) if engine.is_destination(ref, c)]
        if len(clusters) == 1:
            return f"{name}.{clusters[0]}"
        if not clusters:
            raise bad_request(f'pod "{name}" runs on no cluster: no EdgePlacement of the space selects it')
        copies = ", ".join(f"{name}.{c}" for c in clusters)
        raise bad_request(f'pod "{name}" runs on {len(clusters)} clusters: name the copy to reach, one of {copies}')
