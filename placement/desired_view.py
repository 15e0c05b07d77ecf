"""A read-only Kubernetes API over one SyncTarget's desired set, for ``kubectl get`` debugging.

Served at ``/clusters/<inventory>/synctargets/<name>/``: ``kubectl --server <hub>/clusters/inventory/
synctargets/florin get deployments -A`` shows exactly what cluster florin will get, as it will get it
(projected and customized for it). Discovery lists only kinds present in the set; writes answer 405.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors
from apiserver.api.codec import json_response, status_response, table_version
from apiserver.api.paths import parse_resource_path
from apiserver.api.tables import to_table
from apiserver.resourcetypes import ResourceType
from placement.model import DesiredEntry
from placement.service import PlacementService


class DesiredSetAPI:
    def __init__(self, service: PlacementService, version_info: dict[str, str]) -> None:
        self.service = service
        self.inventory = service.inventory
        self.version_info = version_info

    async def handle(self, request: Request, target: str, path: str) -> Response:
        try:
            if self.inventory.sync_target(target) is None:
                raise errors.not_found("synctargets", "edge.kubestellar.io", target)
            if request.method != "GET":
                raise errors.method_not_allowed(f"the desired set of sync target {target} is read-only; "
                                                "change the workload spaces and placements instead")
            return await self._get(request, target, [s for s in path.split("/") if s])
        except errors.StatusError as exc:
            return status_response(exc)

    async def _items(self, target: str) -> list[tuple[ResourceType, dict[str, Any]]]:
        out = []
        for entry in self.service.engine.desired(target):
            rtype = self.service.catalog.by_group_resource(entry.ref.space, entry.ref.resource)
            if rtype is None:
                continue
            obj = await self._content(entry, target)
            if obj is not None:
                out.append((rtype, obj))
        return out

    async def _content(self, entry: DesiredEntry, target: str) -> dict[str, Any] | None:
        """The target's copy (customized for it); an object whose copy cannot be made is left out, as the
        cluster keeps whatever copy it had."""
        if entry.kind == "namespace" and entry.implicit:
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": entry.ref.name}}
        outcome = await self.service.content_for(entry.ref, target)
        return None if outcome is None else outcome.obj

    async def _get(self, request: Request, target: str, segs: list[str]) -> Response:
        items = await self._items(target)
        types: dict[tuple[str, str, str], ResourceType] = {}
        for rtype, _ in items:
            types.setdefault((rtype.group, rtype.version, rtype.plural), rtype)
        if segs == ["version"]:
            return json_response(self.version_info)
        if segs == ["api"]:
            return json_response({"kind": "APIVersions", "versions": ["v1"]})
        if segs == ["apis"]:
            groups = sorted({(g, v) for g, v, _ in types if g})
            return json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                 "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}} for g, v in groups]})
        if (len(segs) == 2 and segs[0] == "api") or (len(segs) == 3 and segs[0] == "apis"):
            group, version = ("", segs[1]) if segs[0] == "api" else (segs[1], segs[2])
            resources = [{"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind,
                          "verbs": ["get", "list"], "shortNames": list(t.short_names)}
                         for (g, v, _), t in sorted(types.items()) if (g, v) == (group, version)]
            return json_response({"kind": "APIResourceList", "apiVersion": "v1",
                                  "groupVersion": f"{group}/{version}" if group else version, "resources": resources})
        rp = parse_resource_path(segs)
        if rp is None or rp.subresource:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        wanted = types.get((rp.group, rp.version, rp.plural))
        selected = [obj for rtype, obj in items
                    if wanted is not None and (rtype.group, rtype.plural) == (wanted.group, wanted.plural)
                    and (rp.namespace is None or obj["metadata"].get("namespace", "") == rp.namespace)]
        if rp.name is not None:
            found = next((o for o in selected if o["metadata"]["name"] == rp.name), None)
            if found is None or wanted is None:
                raise errors.not_found(rp.plural, rp.group, rp.name)
            return self._render(request, wanted, [found], single=True)
        if wanted is None:
            # A kind the cluster gets nothing of: an empty list, as a real cluster would answer.
            return json_response({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})
        return self._render(request, wanted, selected, single=False)

    def _render(self, request: Request, rtype: ResourceType, objs: list[dict[str, Any]], single: bool) -> Response:
        rv = str(self.service.engine.current_seq(request.path_params.get("target", "")) or 1)
        tv = table_version(request.headers.get("accept"))
        if tv is not None:
            return json_response(to_table(rtype, objs, version=tv, include="Object", resource_version=rv))
        if single:
            return Response(orjson.dumps(objs[0]), media_type="application/json")
        return json_response({"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                              "metadata": {"resourceVersion": rv}, "items": objs})
