"""Route one space's Kubernetes API requests to discovery, OpenAPI and the object service."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from apimachinery import errors, kubejsonpath
from apimachinery.fieldselectors import parse_field_selector
from apimachinery.selectors import parse_label_selector
from apiserver.access import Attributes, Authorizer, require
from apiserver.api import discovery, reviews, tokens
from apiserver.api.codec import (
    PROTOBUF,
    decode_apply_body,
    decode_body,
    json_response,
    media_type,
    status_response,
    table_version,
    warning_text,
)
from apiserver.api.openapi_handler import openapi_v2_response
from apiserver.api.params import optional_query_bool, query_bool
from apiserver.api.paths import REQUEST_INFO, RequestInfo, ResourcePath, parse_resource_path
from apiserver.api.tables import to_table
from apiserver.api.tokens import TokenIssuer
from apiserver.api.watchstream import WatchStream, watch_request
from apiserver.catalog import Catalog
from apiserver.fieldvalidation import type_errors
from apiserver.identity import Identity, of_request
from apiserver.openapi.v2 import openapi_v2
from apiserver.openapi.v3 import group_version_path, openapi_document, openapi_index
from apiserver.patching import apply_patch
from apiserver.protobuf import decode_protobuf_body
from apiserver.resourcetypes import ResourceType, ScalePaths
from apiserver.scale import scale_of
from apiserver.service import Objects
from apiserver.spacepaths import full_path
from apiserver.writeoptions import DeleteOptions, WriteOptions

DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"

APPLY_PATCH = "application/apply-patch+yaml"
SCALE_SCHEMA = "io.k8s.api.autoscaling.v1.Scale"


NO_QUERY = QueryParams()


def _query(request: Request) -> QueryParams:
    """The request's query parameters; without any, no parsing (most writes carry none)."""
    return request.query_params if request.scope.get("query_string") else NO_QUERY


def _manager(request: Request) -> str:
    explicit = _query(request).get("fieldManager")
    if explicit:
        if len(explicit) > 128:
            raise errors.bad_request("fieldManager: Too long: may not be longer than 128")
        return explicit
    # kube-apiserver derives the manager from the User-Agent's product token when none is given.
    return (request.headers.get("user-agent") or "unknown").split("/", 1)[0][:128] or "unknown"


def write_options(request: Request) -> WriteOptions:
    query = _query(request)
    dry = query.getlist("dryRun")
    if any(d != "All" for d in dry):
        raise errors.bad_request(f"Invalid dryRun value {dry}: only 'All' is supported")
    validation = query.get("fieldValidation") or "Warn"
    if validation not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(f'Invalid fieldValidation "{validation}": must be one of Strict, Warn, Ignore')
    return WriteOptions(dry_run=bool(dry), manager=_manager(request), field_validation=validation,
                        user=of_request(request.scope))


def warning_headers(opts: WriteOptions) -> dict[str, str] | None:
    if not opts.warnings:
        return None
    # One header value per warning is what clients print; Starlette joins duplicates, so send them
    # comma-separated as RFC 7234 allows.
    return {"Warning": ", ".join(f"299 - {warning_text(w)}" for w in opts.warnings)}


def request_verb(request: Request, rp: ResourcePath) -> str:
    """The API verb of a request (kube's RequestInfo), as resource types list the verbs they serve."""
    method = request.method
    if method == "GET":
        if rp.name is not None:
            return "get"
        return "watch" if query_bool(request.query_params, "watch") else "list"
    if method == "DELETE":
        return "delete" if rp.name is not None else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _request_info(request: Request, rp: ResourcePath, verb: str) -> RequestInfo:
    if verb in ("get", "list", "watch", "deletecollection"):
        label = verb.upper()
    elif request.method == "PATCH" and request.headers.get("content-type", "").startswith(APPLY_PATCH):
        label = "APPLY"
    else:
        label = request.method
    scope = "resource" if rp.name is not None else ("namespace" if rp.namespace is not None else "cluster")
    return RequestInfo(label, rp.group, rp.version, rp.plural, rp.subresource, scope)


class SpaceAPI:
    def __init__(self, objects: Objects, catalog: Catalog, space_phase: Callable[[str], str | None],
                 version_info: dict[str, str], authorizer: Authorizer, tokens: TokenIssuer | None = None) -> None:
        """``tokens``: who signs ServiceAccount tokens and reviews tokens (None: TokenRequest and TokenReview
        are refused)."""
        self.tokens = tokens
        self.objects = objects
        self.catalog = catalog
        self.space_phase = space_phase
        self.version_info = version_info
        self.authorizer = authorizer

    async def handle(self, request: Request, space: str, path: str) -> Response:
        try:
            segs = [s for s in path.split("/") if s]
            # Authorization first: someone who may not enter a space learns nothing of it, not even whether
            # it exists.
            self._authorize(request, space, segs)
            if self.space_phase(space) is None:
                raise errors.StatusError(404, "NotFound", f'spaces.spacehub.io "{full_path(space)}" not found',
                                         name=full_path(space), group="spacehub.io", kind="spaces")
            return await self._route(request, space, segs)
        except errors.StatusError as exc:
            return status_response(exc)

    def _authorize(self, request: Request, space: str, segs: list[str]) -> None:
        """kube's authorization filter: the request's attributes against the authorizer, 403 if not allowed."""
        who: Identity = of_request(request.scope) or reviews.ANONYMOUS
        rp = parse_resource_path(segs)
        if rp is None:
            # Discovery, OpenAPI and /version are non-resource requests, as on kube-apiserver.
            attributes = Attributes(verb=request.method.lower(), path="/" + "/".join(segs))
        else:
            verb = request_verb(request, rp)
            attributes = Attributes(verb=verb, namespace=rp.namespace or "", group=rp.group, version=rp.version,
                                    resource=rp.plural, subresource=rp.subresource, name=rp.name or "")
        try:
            require(self.authorizer, space, who, attributes)
        except errors.StatusError:
            # Denials are counted by verb and resource like every answer, for resources that exist (labels
            # from arbitrary paths would have no bound).
            if rp is not None and self.catalog.lookup(space, rp.group, rp.version, rp.plural) is not None:
                request.scope[REQUEST_INFO] = _request_info(request, rp, attributes.verb)
            raise

    async def _route(self, request: Request, space: str, segs: list[str]) -> Response:
        types = self.catalog.types(space)
        if request.method == "GET":
            if segs == ["version"]:
                return json_response(self.version_info)
            if segs and segs[0] == "openapi":
                return self._openapi(request, space, segs[1:])
            if segs in (["api"], ["apis"]):
                return self._discovery_root(request, types, legacy=segs == ["api"])
            if len(segs) == 2 and segs[0] == "api":
                body = discovery.resource_list(types, "", segs[1])
                return self._bytes(body)
            if len(segs) == 2 and segs[0] == "apis":
                doc = discovery.group(types, segs[1])
                if doc is None:
                    raise self._not_served()
                return json_response(doc)
            if len(segs) == 3 and segs[0] == "apis":
                return self._bytes(discovery.resource_list(types, segs[1], segs[2]))
        rp = parse_resource_path(segs)
        if rp is None:
            raise self._not_served()
        rtype = self.catalog.lookup(space, rp.group, rp.version, rp.plural)
        if rtype is None or (rp.namespace is not None and not rtype.namespaced):
            raise self._not_served()
        if rp.subresource and rp.subresource not in rtype.subresources:
            raise self._not_served()
        return await self._resource(request, space, rtype, rp)

    @staticmethod
    def _not_served() -> errors.StatusError:
        return errors.StatusError(404, "NotFound", "the server could not find the requested resource")

    @staticmethod
    def _bytes(body: bytes | None) -> Response:
        if body is None:
            raise SpaceAPI._not_served()
        return Response(body, media_type="application/json")

    def _discovery_root(self, request: Request, types: tuple[ResourceType, ...], legacy: bool) -> Response:
        if discovery.wants_aggregated(request.headers.get("accept")):
            body, etag = discovery.aggregated(types, legacy)
            headers = {"ETag": etag, "Vary": "Accept"}
            if request.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers=headers)
            return Response(body, media_type=discovery.AGGREGATED_V2, headers=headers)
        if legacy:
            return json_response(discovery.api_versions())
        return Response(discovery.group_list(types), media_type="application/json")

    def _openapi(self, request: Request, space: str, segs: list[str]) -> Response:
        if segs == ["v2"]:
            # v2 is one document made from all the v3 ones, so it is cached by their hashes.
            return openapi_v2_response(request, openapi_v2(self._openapi_v3_documents(space)))
        if not segs or segs[0] != "v3":
            raise self._not_served()
        docs = self._openapi_v3_documents(space)
        if len(segs) == 1:
            return json_response(openapi_index({gv: digest for gv, (_, digest) in docs.items()}, ""))
        found = docs.get("/".join(segs[1:]))
        if found is None:
            raise self._not_served()
        body, digest = found
        headers = {"ETag": f'"{digest}"'}
        if request.query_params.get("hash") == digest:
            headers["Cache-Control"] = "public, immutable"
        return Response(body, media_type="application/json", headers=headers)

    def _openapi_v3_documents(self, space: str) -> dict[str, tuple[bytes, str]]:
        """``{group_version_path: (document, hash)}`` for every group/version the space serves."""
        by_gv: dict[tuple[str, str], list[ResourceType]] = {}
        for t in self.catalog.types(space):
            by_gv.setdefault((t.group, t.version), []).append(t)
        defs = self.catalog.definitions_for(space)
        return {group_version_path(g, v): openapi_document(g, v, tuple(ts), defs)
                for (g, v), ts in by_gv.items()}

    # --- resources ----------------------------------------------------------------------------

    async def _resource(self, request: Request, space: str, rtype: ResourceType, rp: ResourcePath) -> Response:
        method = request.method
        namespace = rp.namespace
        if rtype.namespaced and rp.name is not None and namespace is None:
            raise self._not_served()
        ns = namespace or ""
        verb = request_verb(request, rp)
        request.scope[REQUEST_INFO] = _request_info(request, rp, verb)
        if verb not in rtype.verbs:
            raise errors.method_not_allowed("the server does not allow this method on the requested resource")
        if rtype.terminating and verb == "create" and not rp.subresource:
            raise errors.method_not_allowed(f"{verb} not allowed while custom resource definition is terminating")
        if rp.name is None:
            if method == "GET":
                return await self._list_or_watch(request, space, rtype, namespace)
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise errors.method_not_allowed("the server does not allow this method on the requested "
                                                    "resource")
                return await self._create(request, space, rtype, ns)
            if method == "DELETE":
                return await self._delete_collection(request, space, rtype, namespace)
            raise errors.method_not_allowed(f"the server does not allow method {method} on a collection")
        name = rp.name
        if rp.subresource == "token":
            return await self._token_request(request, space, rtype, ns, name)
        if rp.subresource == "scale":
            return await self._scale(request, space, rtype, ns, name)
        if method == "GET":
            obj = await self.objects.get(space, rtype, ns, name)
            return self._object_response(request, rtype, obj)
        if method == "PUT":
            opts = write_options(request)
            body = await self._object_body(request, rtype)
            obj = await self.objects.update(space, rtype, ns, name, body, opts, subresource=rp.subresource)
            return json_response(obj, headers=warning_headers(opts))
        if method == "PATCH":
            return await self._patch(request, space, rtype, ns, name, rp.subresource)
        if method == "DELETE" and not rp.subresource:
            return await self._delete(request, space, rtype, ns, name)
        raise errors.method_not_allowed(f"the server does not allow method {method} on this resource")

    def _object_response(self, request: Request, rtype: ResourceType, obj: dict[str, Any],
                         status: int = 200, headers: dict[str, str] | None = None) -> Response:
        tv = table_version(request.headers.get("accept"))
        if tv is not None:
            include = request.query_params.get("includeObject") or "Metadata"
            return json_response(to_table(rtype, [obj], version=tv, include=include,
                                          resource_version=obj["metadata"].get("resourceVersion", "")))
        return json_response(obj, status, headers)

    @staticmethod
    async def _object_body(request: Request, rtype: ResourceType) -> Any:
        content_type = request.headers.get("content-type")
        if media_type(content_type) == PROTOBUF:
            return decode_protobuf_body(await request.body(), rtype)
        return decode_body(await request.body(), content_type)

    async def _create(self, request: Request, space: str, rtype: ResourceType, ns: str) -> Response:
        opts = write_options(request)
        body = await self._object_body(request, rtype)
        if rtype.group_resource in reviews.REVIEWS:
            answer = reviews.answer(rtype.group_resource, body, of_request(request.scope), self.authorizer, space)
            return json_response(answer, 201)
        if rtype.group_resource == tokens.TOKEN_REVIEW:
            token, audiences = tokens.token_review_token(body)
            issuer = self._issuer()
            reviewed = await self.objects.run_sync(issuer.review, space, token)
            return json_response(tokens.token_review_answer(body, audiences, issuer, reviewed), 201)
        obj = await self.objects.create(space, rtype, ns, body, opts)
        return json_response(obj, 201, warning_headers(opts))

    def _issuer(self) -> TokenIssuer:
        if self.tokens is None:
            raise errors.method_not_allowed("this server issues and reviews no tokens")
        return self.tokens

    async def _token_request(self, request: Request, space: str, rtype: ResourceType, ns: str,
                             name: str) -> Response:
        """``serviceaccounts/<name>/token``: a token for an existing ServiceAccount (kube's TokenRequest)."""
        if request.method != "POST":
            raise errors.method_not_allowed(f"the server does not allow method {request.method} on this resource")
        issuer = self._issuer()
        content_type = request.headers.get("content-type")
        if media_type(content_type) == PROTOBUF:  # kubectl create token sends it so
            body = decode_protobuf_body(await request.body(), tokens.token_request_type(rtype))
        else:
            body = decode_body(await request.body(), content_type)
        audiences, seconds = tokens.token_request_parameters(body, issuer)
        account = await self.objects.get(space, rtype, ns, name)
        token, expires = await self.objects.run_sync(issuer.mint, space, account, audiences, seconds)
        return json_response(tokens.token_request_answer(account, audiences, seconds, token, expires), 201)

    async def _patch(self, request: Request, space: str, rtype: ResourceType, ns: str, name: str,
                     subresource: str) -> Response:
        opts = write_options(request)
        content_type = media_type(request.headers.get("content-type"))
        if content_type == APPLY_PATCH:
            if not request.query_params.get("fieldManager"):
                raise errors.bad_request("PATCH, application/apply-patch+yaml: fieldManager is required for apply "
                                         "requests")
            force = query_bool(request.query_params, "force")
            body = decode_apply_body(await request.body())
            obj, created = await self.objects.apply(space, rtype, ns, name, body, opts, force=force,
                                                    subresource=subresource)
            return json_response(obj, 201 if created else 200, warning_headers(opts))
        obj = await self.objects.patch(space, rtype, ns, name, await request.body(), content_type, opts,
                                       subresource=subresource)
        return json_response(obj, headers=warning_headers(opts))

    def _selectors(self, request: Request, rtype: ResourceType) -> tuple[Any, Any]:
        q = request.query_params
        labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
        fields = parse_field_selector(q["fieldSelector"], rtype.strategy.selectable_fields) \
            if q.get("fieldSelector") else None
        return labels, fields

    async def _list_or_watch(self, request: Request, space: str, rtype: ResourceType,
                             namespace: str | None) -> Response:
        q = request.query_params
        labels, fields = self._selectors(request, rtype)
        tv = table_version(request.headers.get("accept"))
        include = q.get("includeObject") or "Metadata"
        if query_bool(q, "watch"):
            req = watch_request(q, space, rtype, namespace, labels, fields, tv, include)
            return StreamingResponse(WatchStream(self.objects, req).body(), media_type="application/json")
        limit_text = q.get("limit") or "0"
        try:
            limit = max(0, int(limit_text))
        except ValueError as exc:
            raise errors.bad_request(f"invalid limit {limit_text!r}") from exc
        result = await self.objects.list(space, rtype, namespace, labels=labels, fields=fields, limit=limit,
                                         continue_token=q.get("continue") or "",
                                         resource_version=q.get("resourceVersion") or "",
                                         resource_version_match=q.get("resourceVersionMatch") or "")
        if tv is not None:
            return json_response(to_table(rtype, result.items, version=tv, include=include,
                                          resource_version=result.resource_version,
                                          continue_token=result.continue_token,
                                          remaining_item_count=result.remaining_item_count))
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining_item_count is not None:
            meta["remainingItemCount"] = result.remaining_item_count
        return json_response({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta,
                              "items": result.items})

    async def _delete_options(self, request: Request) -> DeleteOptions:
        raw = await request.body()
        body: dict[str, Any] = {}
        if raw.strip():
            decoded = decode_body(raw, request.headers.get("content-type"))
            if not isinstance(decoded, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
            defs = self.catalog.definitions()
            problems = type_errors(decoded, defs[DELETE_OPTIONS], defs, "DeleteOptions")
            if problems:  # what kube's decoder says of a field of the wrong JSON type (e.g. "dryRun": 1.5)
                raise errors.bad_request(problems[0])
            body = decoded
        q = request.query_params
        propagation = body.get("propagationPolicy") or q.get("propagationPolicy") or ""
        orphan = body.get("orphanDependents")
        if orphan is None:
            orphan = optional_query_bool(q, "orphanDependents")
        if not propagation:
            propagation = "Orphan" if orphan is True else "Background"
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise errors.bad_request(f'unsupported propagationPolicy "{propagation}"')
        pre = body.get("preconditions") or {}
        dry = body.get("dryRun") or q.getlist("dryRun")
        if any(d != "All" for d in dry):
            raise errors.bad_request(f"Invalid dryRun value {dry}: only 'All' is supported")
        return DeleteOptions(propagation=propagation, uid=pre.get("uid"),
                             resource_version=pre.get("resourceVersion"), dry_run=bool(dry))

    async def _delete(self, request: Request, space: str, rtype: ResourceType, ns: str, name: str) -> Response:
        options = await self._delete_options(request)
        options.user = of_request(request.scope)  # admission webhooks review who deletes
        obj, gone = await self.objects.delete(space, rtype, ns, name, options)
        if not gone or rtype.returns_deleted_object:
            return json_response(obj)
        # kube's generic store (finalizeDelete): the object is gone; say which one it was.
        details: dict[str, Any] = {"name": name, "kind": rtype.plural, "uid": obj["metadata"].get("uid", "")}
        if rtype.group:
            details["group"] = rtype.group
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "details": details})

    async def _delete_collection(self, request: Request, space: str, rtype: ResourceType,
                                 namespace: str | None) -> Response:
        options = await self._delete_options(request)
        options.user = of_request(request.scope)  # admission webhooks review who deletes
        labels, fields = self._selectors(request, rtype)
        result = await self.objects.list(space, rtype, namespace, labels=labels, fields=fields)
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            try:
                done, _ = await self.objects.delete(space, rtype, meta.get("namespace", ""), meta["name"],
                                                    options)
            except errors.StatusError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(done)
        return json_response({"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                              "metadata": {"resourceVersion": result.resource_version}, "items": deleted})

    async def _scale(self, request: Request, space: str, rtype: ResourceType, ns: str, name: str) -> Response:
        """The ``scale`` subresource: an autoscaling/v1 Scale view of ``spec.replicas``. Every write method and
        patch type upstream accepts here works: PUT, JSON and merge patch, strategic merge patch for built-in
        kinds (custom resources refuse it with 415, as upstream does) and server-side apply."""
        if request.method == "GET":
            return json_response(scale_of(rtype, await self.objects.get(space, rtype, ns, name)))
        if request.method not in ("PUT", "PATCH"):
            raise errors.method_not_allowed(f"the server does not allow method {request.method} on scale")
        opts = write_options(request)
        raw = await request.body()
        content_type = media_type(request.headers.get("content-type"))
        replicas_path = (rtype.scale or ScalePaths()).spec_replicas
        if request.method == "PATCH" and content_type == APPLY_PATCH:
            return await self._apply_scale(request, space, rtype, ns, name, raw, opts)
        # A Scale has no merge keys, but it is a built-in type: strategic merge patch works on it exactly when
        # it works on the scaled kind.
        scale_type = ResourceType(group="autoscaling", version="v1", kind="Scale", plural="scale",
                                  singular="scale", namespaced=True, schema_name=SCALE_SCHEMA,
                                  strategic_merge=rtype.strategic_merge)

        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            current = scale_of(rtype, obj)
            if request.method == "PUT":
                wanted = decode_body(raw, request.headers.get("content-type"))
            else:
                wanted = apply_patch(copy.deepcopy(current), raw, content_type, scale_type)
            kubejsonpath.set_value(obj, replicas_path, _wanted_replicas(wanted, name))
            return obj

        obj = await self.objects.guaranteed_update(space, rtype, ns, name, compute, opts, subresource="scale")
        return json_response(scale_of(rtype, obj), headers=warning_headers(opts))

    async def _apply_scale(self, request: Request, space: str, rtype: ResourceType, ns: str, name: str,
                           raw: bytes, opts: WriteOptions) -> Response:
        """Server-side apply of a Scale: the manager comes to own the scaled object's replicas field,
        recorded with subresource ``scale`` (what upstream's scale field-manager layer records)."""
        if not request.query_params.get("fieldManager"):
            raise errors.bad_request("PATCH, application/apply-patch+yaml: fieldManager is required for apply "
                                     "requests")
        config = decode_apply_body(raw)
        if not isinstance(config, dict) or config.get("apiVersion") != "autoscaling/v1" or \
                config.get("kind") != "Scale":
            raise errors.bad_request("the apply configuration of a scale subresource must be an autoscaling/v1 "
                                     "Scale")
        replicas = _wanted_replicas(config, name)
        parent: dict[str, Any] = {"apiVersion": rtype.api_version, "kind": rtype.kind,
                                  "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
        kubejsonpath.set_value(parent, (rtype.scale or ScalePaths()).spec_replicas, replicas)
        obj, _created = await self.objects.apply(space, rtype, ns, name, parent, opts,
                                                 force=query_bool(request.query_params, "force"), subresource="scale")
        return json_response(scale_of(rtype, obj), headers=warning_headers(opts))


def _wanted_replicas(scale: Any, name: str) -> int:
    replicas = ((scale if isinstance(scale, dict) else {}).get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid("Scale", "autoscaling", name, [errors.Cause(
            "FieldValueInvalid", f"Invalid value: {replicas!r}: must be greater than or equal to 0",
            "spec.replicas")])
    return replicas
