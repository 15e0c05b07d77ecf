"""kubectl's HTTP requests for a space's pods: the stored Pods and, beside them, the clusters' pods.

A space stores Pods like any workload object (``debug.stored``): creating, updating, patching, their status,
watching and deleting a collection are the space API's. Reading and deleting one pod go to the stored Pod of
that name when there is one, else to the clusters. Lists answer the stored Pods (at the store's
resourceVersion) and the clusters' pods the space shows (``debug.naming``: each labelled with its cluster),
asking every cluster at once. A cluster's pod is found in its cluster, and a log or a DELETE is forwarded
there through its tunnel, the response (status, headers, body, a Status for errors) streamed back as it comes;
a stored Pod's log reaches its copy in the cluster it is placed on. The clusters' pods are read-only here:
their own controllers keep them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from apimachinery.errors import StatusError, bad_request, method_not_allowed, not_found
from apiserver.access import Authorizer
from apiserver.api.codec import json_response, status_response, table_version
from apiserver.api.tables import to_table
from apiserver.api.watchstream import watch_request
from apiserver.resourcetypes import ResourceType
from debug.access import STREAMS, authorize, verb_of
from debug.fleet import ClusterPods, Found, Located, warning_header
from debug.naming import labelled
from debug.stored import StoredPods
from debug.watch import PodsWatch
from sync.tunnel import TunnelResponse

READ_ONLY = "a cluster's pod shown in a space is read-only here: change the workload that owns it"
_FORWARDED_HEADERS = ("accept", "content-type", "user-agent")


class PodsHTTP:
    def __init__(self, fleet: ClusterPods, authorizer: Callable[[], Authorizer], pod_type: ResourceType,
                 stored: StoredPods) -> None:
        self.fleet = fleet
        self.authorizer = authorizer  # looked up per request: the hub builds it at startup
        self.pod_type = pod_type
        self.stored = stored

    async def handle(self, request: Request) -> Response:
        params = request.path_params
        space, namespace = str(params["space"]), str(params.get("namespace") or "")
        name, sub = str(params.get("name") or ""), str(params.get("sub") or "")
        try:
            watch = request.query_params.get("watch") in ("true", "1")
            verb = verb_of(request.method, name, sub, watch)
            authorize(self.authorizer(), request.scope, space, verb, namespace, name, sub)
            if not name:
                return await self._collection(request, space, namespace or None, verb)
            stored = await self.stored.get(space, namespace, name) is not None
            if sub == "status" or (not sub and (stored or verb not in ("get", "delete"))):  # the store's
                if not stored and verb in ("update", "patch") and await self._shown(space, namespace, name):
                    raise method_not_allowed(READ_ONLY)
                return await self.stored.forward(request, space)
            if sub == "log":
                return await self._log(request, space, namespace, name)
            if sub in STREAMS:
                return await self._stream_without_upgrade(space, namespace, name, sub)
            if sub:
                raise not_found("pods", "", name)
            # Not a stored Pod's name when it was looked up above: a cluster's pod shown so.
            if verb == "get":
                return await self._get(request, space, namespace, name)
            return await self._delete(request, space, namespace, name)
        except StatusError as exc:
            return status_response(exc)
        except _Refused as refused:
            return json_response(refused.err.to_status(), refused.err.code, refused.headers)

    async def _shown(self, space: str, namespace: str, name: str) -> bool:
        """Whether a cluster's pod is shown as ``name`` (an update of it is refused rather than answered 404)."""
        shown, stored = await self.stored.target(space, namespace, name)
        located, _warnings = await self.fleet.find(space, namespace, shown, stored)
        return located is not None

    async def _collection(self, request: Request, space: str, namespace: str | None, verb: str) -> Response:
        q = request.query_params
        labels, fields = q.get("labelSelector") or "", q.get("fieldSelector") or ""
        if verb == "watch":
            return self._watch(request, space, namespace, labels, fields)
        if verb != "list":  # create and deletecollection: the stored Pods'
            return await self.stored.forward(request, space)
        listed = await self.stored.list(space, namespace, labels, fields)
        found = await self._listed(space, namespace, labels, fields, await self.stored.keys(space, namespace))
        pods = sorted(listed.items + found.pods, key=lambda p: (str(p["metadata"].get("namespace") or ""),
                                                                 str(p["metadata"]["name"])))
        headers = warning_header(found.warnings)
        tv = table_version(request.headers.get("accept"))
        if tv is not None:
            return json_response(to_table(self.pod_type, pods, version=tv,
                                          include=q.get("includeObject") or "Metadata",
                                          resource_version=listed.resource_version), headers=headers)
        return json_response({"kind": "PodList", "apiVersion": "v1",
                              "metadata": {"resourceVersion": listed.resource_version}, "items": pods},
                             headers=headers)

    def _watch(self, request: Request, space: str, namespace: str | None, labels: str, fields: str) -> Response:
        self.fleet.clusters(space)  # a space that does not exist is 404 before the stream starts
        q = request.query_params
        req = watch_request(q, space, self.pod_type, namespace, *self.stored.selectors(labels, fields),
                            table_version(request.headers.get("accept")), q.get("includeObject") or "Metadata")
        return StreamingResponse(PodsWatch(self.fleet, self.stored, req, labels, fields).body(),
                                 media_type="application/json")

    async def _listed(self, space: str, namespace: str | None, labels: str, fields: str,
                      stored: set[tuple[str, str]]) -> Found:
        # One name asked by field (kubectl delete and wait do): the shown name, which the clusters do not know.
        term, _, value = fields.partition("=")
        if namespace and term == "metadata.name" and value and "," not in value and "!" not in term:
            located, warnings = await self.fleet.find(space, namespace, value, {n for _, n in stored})
            if located is None:
                return Found([], warnings)
            found = await self.fleet.list(space, namespace, labels, f"metadata.name={located.name}", stored)
            return Found([p for p in found.pods if p["metadata"]["name"] == value], warnings + found.warnings)
        return await self.fleet.list(space, namespace, labels, fields, stored)

    async def _locate(self, space: str, namespace: str, name: str, *, fresh: bool = False,
                      stored: bool | None = None) -> tuple[Located, dict[str, str]]:
        """Where the cluster's pod shown as ``name`` is (for a stored Pod, its copy); ``fresh``: its current
        content too (asked anew); ``stored``: as :meth:`StoredPods.target`."""
        find = self.fleet.find if fresh else self.fleet.locate
        shown, stored_names = await self.stored.target(space, namespace, name, stored=stored)
        located, warnings = await find(space, namespace, shown, stored_names)
        if located is None:
            raise _Refused(not_found("pods", "", name), warning_header(warnings))
        return located, warning_header(warnings)

    async def _get(self, request: Request, space: str, namespace: str, name: str) -> Response:
        located, headers = await self._locate(space, namespace, name, fresh=True, stored=False)
        pod = labelled(located.cluster, located.pod, name)
        tv = table_version(request.headers.get("accept"))
        if tv is not None:
            rv = str((pod.get("metadata") or {}).get("resourceVersion") or "")
            table = to_table(self.pod_type, [pod], version=tv,
                             include=request.query_params.get("includeObject") or "Metadata", resource_version=rv)
            return json_response(table, headers=headers)
        return json_response(pod, headers=headers)

    async def _delete(self, request: Request, space: str, namespace: str, name: str) -> Response:
        located, headers = await self._locate(space, namespace, name, stored=False)
        response = await self.fleet.tunnels().request(
            located.cluster, "DELETE", located.path, request.url.query,
            _forwarded(request), await request.body())
        async with response:
            body = b"".join([chunk async for chunk in response])
        self.fleet.forget(space, namespace, located.shown)  # gone, or never there
        if response.status == 200:
            deleted = orjson.loads(body) if body else {}
            if isinstance(deleted, dict) and deleted.get("kind") == "Pod":
                body = orjson.dumps(labelled(located.cluster, deleted, name))
        return Response(body, response.status, {**_response_headers(response), **headers})

    async def _log(self, request: Request, space: str, namespace: str, name: str) -> Response:
        if request.method != "GET":
            raise method_not_allowed("the server does not allow this method on the requested resource")
        located, headers = await self._locate(space, namespace, name)
        response = await self.fleet.tunnels().request(
            located.cluster, "GET", located.path + "/log", request.url.query,
            _forwarded(request))
        if response.status == 404:
            self.fleet.forget(space, namespace, located.shown)
        return StreamingResponse(_relayed(response), response.status, {**_response_headers(response), **headers})

    async def _stream_without_upgrade(self, space: str, namespace: str, name: str, sub: str) -> Response:
        """kubectl's fallback to SPDY (or a plain request): the pod must exist, then a Status saying why not."""
        await self._locate(space, namespace, name)
        raise bad_request(f"{sub} in a space is relayed over WebSocket only (kubectl 1.31 or later); SPDY is not "
                          f"served")


class _Refused(Exception):
    """A refusal with headers: a pod not found, and the clusters that could not be asked."""

    def __init__(self, err: StatusError, headers: dict[str, str]) -> None:
        super().__init__(err.message)
        self.err = err
        self.headers = headers


def _forwarded(request: Request) -> list[tuple[str, str]]:
    return [(k, v) for k, v in request.headers.items() if k in _FORWARDED_HEADERS]


def _response_headers(response: TunnelResponse) -> dict[str, str]:
    """The cluster's response headers, repeated ones joined as HTTP allows."""
    out: dict[str, str] = {}
    for key, value in response.headers:
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


async def _relayed(response: TunnelResponse) -> AsyncIterator[bytes]:
    """The body as it arrives; the cluster's side is abandoned when kubectl goes away."""
    async with response:
        async for chunk in response:
            yield chunk
