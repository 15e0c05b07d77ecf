"""The provider's endpoint of an APIExport (kcp's APIExport virtual workspace): the objects of every space bound
to the export, through one Kubernetes-shaped URL.

Under ``/services/apiexport/<provider space>/<export>/clusters/<space>/``, where ``<space>`` is ``*`` (every
space whose binding to the export serves the resource) or one such space:

* ``version``, ``api``, ``apis``, ``apis/<group>[/<version>]``: discovery of the export's resources only;
* ``apis/<group>/<version>/[namespaces/<ns>/]<resource>``: list and watch, each object annotated with the space
  it lives in (``spacehub.io/space``, as kcp adds ``kcp.io/cluster``); with ``*`` objects of several spaces may
  share a namespace and name;
* ``…/<resource>/<name>`` and ``…/<name>/status`` in one space: get; ``…/<name>/status``: update, patch and
  server-side apply — the provider writes status, never what the binding space's users own.

A request needs its verb (discovery and ``version``: ``get``) on ``apiexports/content`` named after the export in
the provider space, asked of the same authorizer as every request (after entering the provider space, as any
request there); the caller needs no rights in the binding spaces. Status writes go through the object service in
the binding space, its validation and admission policies included. Lists are answered whole (``limit`` and
``continue`` are ignored) at one resourceVersion for all spaces: revisions are global to the store, so a watch of
every space resumes from it like any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from apimachinery import errors
from apimachinery.fieldselectors import FieldSelector, parse_field_selector
from apimachinery.selectors import LabelSelector, parse_label_selector
from apiserver.access import Attributes, Authorizer, require
from apiserver.api import discovery
from apiserver.api.codec import (
    decode_apply_body,
    decode_body,
    json_response,
    media_type,
    status_response,
    table_version,
)
from apiserver.api.handlers import APPLY_PATCH, request_verb, warning_headers, write_options
from apiserver.api.params import query_bool
from apiserver.api.paths import ResourcePath, parse_resource_path
from apiserver.api.reviews import ANONYMOUS
from apiserver.api.tables import to_table
from apiserver.api.watchstream import WatchRequest, WatchStream, watch_request
from apiserver.catalog import Catalog
from apiserver.identity import of_request
from apiserver.resourcetypes import Column, ResourceType
from apiserver.service import Objects
from apiserver.spacepaths import store_id
from apiserver.watch import Entry
from spaces.apibinding.index import BindingIndex
from spaces.apibinding.kinds import APIS_GROUP, CONTENT, EXPORT_RESOURCE, SPACE_ANNOTATION
from spaces.apibinding.resolve import ExportRef

EVERY_SPACE = "*"
_EVERYWHERE_VERBS = ("list", "watch")
_ONE_SPACE_VERBS = ("get", "list", "watch")
_STATUS_VERBS = ("get", "patch", "update")
_SPACE_COLUMN = Column("Space", "string", lambda o: ((o.get("metadata") or {}).get("annotations") or {})
                       .get(SPACE_ANNOTATION, ""), "The space the object is stored in.")


def annotated(obj: dict[str, Any], space: str) -> dict[str, Any]:
    """A copy of ``obj`` (the shallow parts that change) carrying the space it lives in."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}), SPACE_ANNOTATION: space}}}


def _without_annotation(obj: Any) -> Any:
    """What a provider sends back, less the annotation this endpoint added (never stored)."""
    annotations = (obj.get("metadata") or {}).get("annotations") if isinstance(obj, dict) else None
    if isinstance(annotations, dict) and SPACE_ANNOTATION in annotations:
        annotations.pop(SPACE_ANNOTATION)
        if not annotations:
            del obj["metadata"]["annotations"]
    return obj


class ExportWatch(WatchStream):
    """A watch of one kind in the spaces an export serves it in, objects annotated with their space."""

    def __init__(self, objects: Objects, req: WatchRequest, space: str | None, serves: Callable[[str], bool],
                 initial: Callable[[], Awaitable[tuple[str, list[dict[str, Any]]]]]) -> None:
        super().__init__(objects, req)
        self.space = space  # None: every space
        self.serves = serves
        self.initial = initial

    def _changes(self, start: int) -> AsyncIterator[Entry]:
        return self.objects.changes(self.space, self.req.rtype.storage_resource, start)

    async def _initial(self) -> tuple[int, list[dict[str, Any]]]:
        revision, items = await self.initial()
        return int(revision), items

    async def _translate(self, entry: Entry) -> tuple[str, dict[str, Any]] | None:
        # Whether the space is bound is asked as the change is sent: a space bound later is seen from then on.
        return await super()._translate(entry) if self.serves(entry.row.key.space) else None

    async def _served(self, entry: Entry) -> dict[str, Any]:
        return annotated(await super()._served(entry), entry.row.key.space)

    def _encode(self, kind: str, obj: dict[str, Any], entry: Entry | None = None) -> bytes:
        # Never the stored wire form: the object sent carries its space.
        return super()._encode(kind, obj)


class ExportAPI:
    def __init__(self, objects: Objects, catalog: Catalog, index: BindingIndex, authorizer: Authorizer,
                 version_info: dict[str, str]) -> None:
        self.objects = objects
        self.catalog = catalog
        self.index = index
        self.authorizer = authorizer
        self.version_info = version_info

    async def handle(self, request: Request, provider: str, export: str, space: str, path: str) -> Response:
        try:
            # Spaces by path (``root:org:p``) or by id (``org:p``), as everywhere on the hub.
            return await self._handle(request, ExportRef(store_id(provider), export), space if space == "*" else
                                      store_id(space),
                                      [s for s in path.split("/") if s])
        except errors.StatusError as exc:
            return status_response(exc)

    async def _handle(self, request: Request, ref: ExportRef, space: str, segs: list[str]) -> Response:
        rp = parse_resource_path(segs)
        verb = request_verb(request, rp) if rp is not None else "get"
        require(self.authorizer, ref.path, of_request(request.scope) or ANONYMOUS,
                Attributes(verb=verb, group=APIS_GROUP, resource=EXPORT_RESOURCE, subresource=CONTENT,
                           name=ref.name))
        offered = self.index.offer(ref)
        if offered is None:
            raise errors.not_found(EXPORT_RESOURCE, APIS_GROUP, ref.name)
        everywhere = space == EVERY_SPACE
        if not everywhere and not self.index.binds(space, ref):
            raise errors.StatusError(404, "NotFound", f'space "{space}" has no APIBinding to {ref}')
        types = tuple(self._view(t, everywhere) for t in offered.all_types()
                      if everywhere or self.index.serves(space, ref, t.group_resource))
        if rp is None:
            return self._discovery(request, segs, types)
        rtype = next((t for t in types if (t.group, t.version, t.plural) == (rp.group, rp.version, rp.plural)), None)
        if rtype is None or (rp.namespace is not None and not rtype.namespaced) or \
                (rp.subresource and rp.subresource not in rtype.subresources) or \
                (rtype.namespaced and rp.name is not None and rp.namespace is None):
            raise _not_served()
        if verb not in (_STATUS_VERBS if rp.subresource else rtype.verbs):
            raise errors.method_not_allowed(f"the endpoint of {ref} does not allow {verb} here: it lists and watches "
                                            "the objects of every space, reads one space's and writes their status")
        if rp.name is None:
            spaces = self.index.serving(ref, rtype.group_resource) if everywhere else [space]
            return await self._list_or_watch(request, ref, rtype, rp, None if everywhere else space, spaces)
        served = self.catalog.lookup(space, rtype.group, rtype.version, rtype.plural)
        if served is None:
            raise _not_served()
        return await self._object(request, space, served, rtype, rp, verb)

    @staticmethod
    def _view(t: ResourceType, everywhere: bool) -> ResourceType:
        """A type as this endpoint serves it: its verbs, the status subresource, a column naming the space."""
        subresources = () if everywhere or "status" not in t.subresources else ("status",)
        columns = (t.columns[0], _SPACE_COLUMN, *t.columns[1:]) if t.columns else ()
        return dataclasses.replace(t, verbs=_EVERYWHERE_VERBS if everywhere else _ONE_SPACE_VERBS,
                                   subresources=subresources, columns=columns)

    def _discovery(self, request: Request, segs: list[str], types: tuple[ResourceType, ...]) -> Response:
        if request.method != "GET":
            raise errors.method_not_allowed(f"the server does not allow method {request.method} here")
        if segs == ["version"]:
            return json_response(self.version_info)
        if segs in (["api"], ["apis"]):
            legacy = segs == ["api"]
            if discovery.wants_aggregated(request.headers.get("accept")):
                body, etag = discovery.aggregated(types, legacy)
                return Response(body, media_type=discovery.AGGREGATED_V2, headers={"ETag": etag, "Vary": "Accept"})
            if legacy:  # an export offers custom resources only: no core group
                return json_response({"kind": "APIVersions", "versions": []})
            return Response(discovery.group_list(types), media_type="application/json")
        found: Any = None
        if len(segs) == 2 and segs[0] == "apis":
            found = discovery.group(types, segs[1])
            if found is not None:
                return json_response(found)
        elif len(segs) == 3 and segs[0] == "apis":
            found = discovery.resource_list(types, segs[1], segs[2])
            if found is not None:
                return Response(found, media_type="application/json")
        raise _not_served()

    async def _list(self, spaces: list[str], rtype: ResourceType, namespace: str | None,
                    selectors: tuple[LabelSelector | None, FieldSelector | None],
                    revision: str = "") -> tuple[str, list[dict[str, Any]]]:
        """Every space's objects at one revision (now, unless given)."""
        labels, fields = selectors
        if not revision:
            revision = str(await self.objects.run_sync(self.objects.current_revision))
        items: list[dict[str, Any]] = []
        for space in spaces:
            served = self.catalog.lookup(space, rtype.group, rtype.version, rtype.plural)
            if served is None:
                continue
            result = await self.objects.list(space, served, namespace, labels=labels, fields=fields,
                                             resource_version=revision, resource_version_match="Exact")
            items.extend(annotated(obj, space) for obj in result.items)
        return revision, items

    async def _list_or_watch(self, request: Request, ref: ExportRef, rtype: ResourceType, rp: ResourcePath,
                             space: str | None, spaces: list[str]) -> Response:
        q = request.query_params
        tv = table_version(request.headers.get("accept"))
        include = q.get("includeObject") or "Metadata"
        selectors = (parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None,
                     parse_field_selector(q["fieldSelector"], rtype.strategy.selectable_fields)
                     if q.get("fieldSelector") else None)
        if query_bool(q, "watch"):
            req = watch_request(q, space or "", rtype, rp.namespace, *selectors, tv, include)

            def serves(where: str) -> bool:
                return (space is None or where == space) and self.index.serves(where, ref, rtype.group_resource)

            async def initial() -> tuple[str, list[dict[str, Any]]]:
                return await self._list(self.index.serving(ref, rtype.group_resource) if space is None else [space],
                                        rtype, rp.namespace, selectors)

            stream = ExportWatch(self.objects, req, space, serves, initial)
            return StreamingResponse(stream.body(), media_type="application/json")
        exact = q.get("resourceVersion") if q.get("resourceVersionMatch") == "Exact" else ""
        revision, items = await self._list(spaces, rtype, rp.namespace, selectors, exact or "")
        if tv is not None:
            return json_response(to_table(rtype, items, version=tv, include=include, resource_version=revision))
        return json_response({"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                              "metadata": {"resourceVersion": revision}, "items": items})

    async def _object(self, request: Request, space: str, served: ResourceType, view: ResourceType,
                      rp: ResourcePath, verb: str) -> Response:
        ns, name = rp.namespace or "", rp.name or ""
        if verb == "get":
            obj = annotated(await self.objects.get(space, served, ns, name), space)
            tv = table_version(request.headers.get("accept"))
            if tv is not None:
                return json_response(to_table(view, [obj], version=tv,
                                              include=request.query_params.get("includeObject") or "Metadata"))
            return json_response(obj)
        opts = write_options(request)
        raw = await request.body()
        content_type = media_type(request.headers.get("content-type"))
        if verb == "update":
            body = _without_annotation(decode_body(raw, request.headers.get("content-type")))
            obj = await self.objects.update(space, served, ns, name, body, opts, subresource="status")
        elif content_type == APPLY_PATCH:
            if not request.query_params.get("fieldManager"):
                raise errors.bad_request("PATCH, application/apply-patch+yaml: fieldManager is required for apply "
                                         "requests")
            body = _without_annotation(decode_apply_body(raw))
            obj, _ = await self.objects.apply(space, served, ns, name, body, opts,
                                              force=query_bool(request.query_params, "force"), subresource="status")
        else:
            obj = await self.objects.patch(space, served, ns, name, raw, content_type, opts, subresource="status")
        return json_response(annotated(obj, space), headers=warning_headers(opts))


def _not_served() -> errors.StatusError:
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource")
