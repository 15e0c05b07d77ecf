"""Where the hub serves a space's pods: the paths ``debug`` claims from the space API, its routes, and the Pod
kind a space serves.

The Pod kind is the clusters' (``apiserver.builtin.clusterkinds``: its schema, strategy and table columns), with
every verb: a space stores Pods like any workload object, and ``debug.http`` shows the clusters' pods beside
them (README "Debug from the hub").
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from starlette.routing import BaseRoute, Route, WebSocketRoute

from apiserver.access import Authorizer
from apiserver.api.handlers import SpaceAPI
from apiserver.builtin.clusterkinds import cluster_types
from apiserver.resourcetypes import ResourceType
from debug.fleet import ClusterPods
from debug.http import PodsHTTP
from debug.sockets import PodSockets
from debug.stored import StoredPods
from placement.service import PlacementService
from sync.tunnel import TunnelRegistry

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_NAMESPACED = "/clusters/{space}/api/v1/namespaces/{namespace}/pods"


@functools.cache
def space_pod_type() -> ResourceType:
    return next(t for t in cluster_types() if t.kind == "Pod")


def claims(rest: str) -> bool:
    """Whether a space path (what follows ``/clusters/<space>/``) is a pods path, served here: the pods of
    every namespace, or of one, one pod, or its subresource."""
    if not rest.startswith("api/v1/"):
        return False
    if rest == "api/v1/pods":
        return True
    parts = rest.split("/", 5)
    return len(parts) >= 5 and parts[2] == "namespaces" and parts[4] == "pods"


def pod_routes(tunnels: Callable[[], TunnelRegistry], placement: Callable[[], PlacementService],
               authorizer: Callable[[], Authorizer], space_api: Callable[[], SpaceAPI]) -> list[BaseRoute]:
    """The routes serving what :func:`claims` claims (each callable gives its part of the started hub)."""
    fleet = ClusterPods(tunnels, placement)
    stored = StoredPods(space_api, space_pod_type(), fleet)
    http = PodsHTTP(fleet, authorizer, space_pod_type(), stored).handle
    return [Route("/clusters/{space}/api/v1/pods", http, methods=METHODS),
            Route(_NAMESPACED, http, methods=METHODS),
            Route(_NAMESPACED + "/{name}", http, methods=METHODS),
            Route(_NAMESPACED + "/{name}/{sub}", http, methods=METHODS),
            WebSocketRoute(_NAMESPACED + "/{name}/{sub}", PodSockets(fleet, authorizer, stored).handle)]
