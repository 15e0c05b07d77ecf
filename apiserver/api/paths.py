"""Parse a space-relative URL path into what it addresses (kube's RequestInfo)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourcePath:
    group: str
    version: str
    plural: str
    namespace: str | None  # None: cluster-scoped request or list across all namespaces
    name: str | None
    subresource: str


REQUEST_INFO = "spacehub.request_info"  # ASGI scope key: the RequestInfo of a resource request, for metrics


@dataclass(frozen=True)
class RequestInfo:
    """What a resource request did, labelled as kube-apiserver labels ``apiserver_request_total``."""

    verb: str  # GET LIST WATCH POST PUT PATCH APPLY DELETE DELETECOLLECTION
    group: str
    version: str
    resource: str
    subresource: str
    scope: str  # resource (one object), namespace or cluster


def parse_resource_path(segments: list[str]) -> ResourcePath | None:
    """``segments`` follow ``api/v1`` or ``apis/<group>/<version>``; None if the path addresses no resource."""
    if segments and segments[0] == "api":
        if len(segments) < 3:
            return None
        group, version, rest = "", segments[1], segments[2:]
    elif segments and segments[0] == "apis":
        if len(segments) < 4:
            return None
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    namespace: str | None = None
    # /namespaces/<ns>/<resource>… addresses namespaced objects; /namespaces/<ns>[/status|/finalize]
    # addresses the Namespace itself.
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3 or any(not s for s in rest):
        return None
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    return ResourcePath(group, version, plural, namespace, name, sub)
