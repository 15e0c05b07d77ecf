"""Discovery documents for one space: legacy (/api, /apis, per group-version) and aggregated v2.

Documents depend only on the set of types a space serves, so they are built once per type set and
cached with their ETag; spaces with the same APIs share them (as kcp shares OpenAPI services).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from apiserver.resourcetypes import ResourceType

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_STATUS_VERBS = ["get", "patch", "update"]
# Upstream's connect subresources (a simulated cluster's pods serve them): the kind and verbs its discovery lists.
_CONNECT = {"attach": ("PodAttachOptions", ["create", "get"]), "exec": ("PodExecOptions", ["create", "get"]),
            "log": ("Pod", ["get"]), "portforward": ("PodPortForwardOptions", ["create", "get"])}
_TOKEN_REQUEST = {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}  # serviceaccounts/token


def wants_aggregated(accept: str | None) -> bool:
    for part in (accept or "").split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip() for p in part.split(";")[1:] if "=" in p}
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
            return params.get("v") == "v2"
        if part.split(";")[0].strip() in ("application/json", "*/*"):
            return False
    return False


def _groups(types: Sequence[ResourceType]) -> dict[str, list[str]]:
    """Group name → versions in preference order (first seen first)."""
    groups: dict[str, list[str]] = {}
    for t in types:
        versions = groups.setdefault(t.group, [])
        if t.version not in versions:
            versions.append(t.version)
    return groups


def _sub_kind(rtype: ResourceType, sub: str) -> dict[str, str]:
    if sub == "scale":
        return {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    if sub == "token":
        return dict(_TOKEN_REQUEST)
    return {"group": rtype.group, "version": rtype.version, "kind": _CONNECT.get(sub, (rtype.kind, None))[0]}


def _sub_verbs(sub: str) -> list[str]:
    if sub == "token":
        return ["create"]
    return _CONNECT[sub][1] if sub in _CONNECT else _STATUS_VERBS


def _aggregated_resource(t: ResourceType) -> dict[str, Any]:
    res: dict[str, Any] = {
        "resource": t.plural,
        "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
        "scope": "Namespaced" if t.namespaced else "Cluster",
        "singularResource": t.singular,
        "verbs": _verbs(t),
    }
    if t.short_names:
        res["shortNames"] = list(t.short_names)
    if t.categories:
        res["categories"] = list(t.categories)
    if t.subresources:
        res["subresources"] = [{"subresource": s, "responseKind": _sub_kind(t, s), "verbs": _sub_verbs(s)}
                               for s in t.subresources]
    return res


@functools.lru_cache(maxsize=64)
def aggregated(types: tuple[ResourceType, ...], legacy: bool) -> tuple[bytes, str]:
    """Aggregated discovery for /api (legacy=True) or /apis; returns (body, etag)."""
    items = []
    for group, versions in _groups(types).items():
        if (group == "") != legacy:
            continue
        items.append({
            "metadata": {"name": group} if group else {},
            "versions": [{
                "version": v,
                "resources": [_aggregated_resource(t) for t in types if t.group == group and t.version == v],
                "freshness": "Current",
            } for v in versions],
        })
    body = orjson.dumps({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                         "metadata": {}, "items": items})
    return body, '"' + hashlib.sha512(body).hexdigest()[:32] + '"'


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


@functools.lru_cache(maxsize=64)
def group_list(types: tuple[ResourceType, ...]) -> bytes:
    groups = [_group_doc(g, vs) for g, vs in _groups(types).items() if g]
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


def group(types: tuple[ResourceType, ...], name: str) -> dict[str, Any] | None:
    versions = _groups(types).get(name)
    if not versions or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(name, versions)}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}


@functools.lru_cache(maxsize=256)
def resource_list(types: tuple[ResourceType, ...], group: str, version: str) -> bytes | None:
    resources: list[dict[str, Any]] = []
    for t in types:
        if t.group != group or t.version != version:
            continue
        entry: dict[str, Any] = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                                 "kind": t.kind, "verbs": _verbs(t)}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        for sub in t.subresources:
            sub_entry: dict[str, Any] = {"name": f"{t.plural}/{sub}", "singularName": "",
                                         "namespaced": t.namespaced, "kind": _sub_kind(t, sub)["kind"],
                                         "verbs": _sub_verbs(sub)}
            if sub in ("scale", "token"):
                sub_entry.update(group=_sub_kind(t, sub)["group"], version=_sub_kind(t, sub)["version"])
            resources.append(sub_entry)
    if not resources:
        return None
    gv = f"{group}/{version}" if group else version
    return orjson.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                         "resources": resources})


def _verbs(t: ResourceType) -> list[str]:
    """What discovery says a kind serves; a terminating custom resource lists no writes but deletes
    (apiextensions' discovery controller), though updates still work so that finalizers can finish."""
    if t.terminating:
        return [v for v in t.verbs if v not in ("create", "update", "patch")]
    return list(t.verbs)
