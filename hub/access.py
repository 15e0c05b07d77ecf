"""What each hub endpoint outside the spaces' Kubernetes API asks of the authorizer.

The spaces' API (``/clusters/<space>/…``) authorizes its own requests (``apiserver.api.handlers``); everything
else is mapped here to the attributes of the space it reads or changes, so that one authorizer and the same
bindings answer for every endpoint:

* the placement REST API's ``/spaces/<space>/…`` reads are reads of that space's EdgePlacements, and a staged
  rollout's controls (``…/placements/<name>:pause``, ``:resume``, ``:approve``, ``:undo``) are ``update`` of one;
* its ``/clusters…`` endpoints are reads and writes of the inventory space's SyncTargets (registering is
  ``create``, cordon, drain and rotation are ``update``, deleting is ``delete``), and so is a syncer's desired
  set at ``/clusters/<inventory>/synctargets/<name>/…``;
* the web UI's fleet summary (``/ui/v1/fleet``, each cluster's object count) is a list of the inventory space's
  SyncTargets, as the placement API's cluster list is;
* an APIExport's endpoint (``/services/apiexport/…``) authorizes each request itself, with this authorizer: its verb
  on ``apiexports/content`` in the provider space depends on the query (list or watch);
* anything else (``/metrics``, ``/syncer/v1``, ``/spacehub/v1``, ``/placement/v1/conflicts``) is a
  non-resource URL in the root space, as ``/metrics`` is on kube-apiserver.

A WebSocket handshake is authorized as the ``GET`` it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apimachinery.errors import StatusError
from apiserver.access import PARENT_SPACE, Attributes, Authorizer, require
from apiserver.identity import of_request
from spaces.apibinding.kinds import ENDPOINT_PREFIX

EDGE_GROUP = "edge.kubestellar.io"
PLACEMENT_API = "/placement/v1"
UI_FLEET = "/ui/v1/fleet"


def attributes_for(method: str, path: str, inventory_space: str) -> tuple[str, Attributes] | None:
    """(space, attributes) of a request; None for the spaces' API, which authorizes itself."""
    if path.startswith("/clusters/"):  # checked first: almost every request is one
        parts = path.split("/", 5)  # "", "clusters", space, "synctargets", name, …
        if len(parts) >= 5 and parts[2] == inventory_space and parts[3] == "synctargets" and parts[4]:
            return inventory_space, Attributes(verb="get", group=EDGE_GROUP, resource="synctargets", name=parts[4])
        return None
    if path == UI_FLEET:
        return inventory_space, Attributes(verb="list", group=EDGE_GROUP, resource="synctargets")
    if path.startswith(ENDPOINT_PREFIX):
        return None
    parts = [p for p in path.split("/") if p]
    if path.startswith(PLACEMENT_API + "/"):
        rest = parts[2:]
        if rest[:1] == ["spaces"] and len(rest) == 4 and rest[2] == "placements" and method == "POST" and \
                rest[3].endswith(":reschedule"):  # asks for a new choice: writes the placement
            return rest[1], Attributes(verb="update", group=EDGE_GROUP, resource="edgeplacements",
                                       name=rest[3].rpartition(":")[0])
        if rest[:1] == ["spaces"] and len(rest) >= 4 and rest[2] == "placements" and \
                (":" in rest[3] or len(rest) == 5):  # a rollout's controls and reads
            name, _, action = rest[3].partition(":")
            verb = "update" if action and method == "POST" else "get"
            return rest[1], Attributes(verb=verb, group=EDGE_GROUP, resource="edgeplacements", name=name)
        if rest[:1] == ["spaces"] and len(rest) >= 2:
            named = method == "GET" and len(rest) == 4 and rest[2] == "placements"
            return rest[1], Attributes(verb="get" if named else "list", group=EDGE_GROUP, resource="edgeplacements",
                                       name=rest[3] if named else "")
        if rest[:1] == ["clusters"]:
            return inventory_space, _cluster_attributes(method, rest[1:])
    return PARENT_SPACE, Attributes(verb=method.lower(), path=path)


def _cluster_attributes(method: str, rest: list[str]) -> Attributes:
    if not rest:
        verb, name = ("create" if method == "POST" else "list"), ""
    else:
        name, _, action = rest[0].partition(":")
        verb = {"GET": "get", "DELETE": "delete"}.get(method, "update") if not action else "update"
    return Attributes(verb=verb, group=EDGE_GROUP, resource="synctargets", name=name)


class EndpointAuthorization:
    """ASGI middleware after authentication: 403 unless the identity may do what the request asks."""

    def __init__(self, app: Callable[..., Any], authorizer: Callable[[], Authorizer], inventory_space: str,
                 send_status: Callable[[dict[str, Any], Any, StatusError], Any]) -> None:
        self.app = app
        self.authorizer = authorizer  # looked up per request: the core builds it at startup
        self.inventory_space = inventory_space
        self.send_status = send_status

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        who = of_request(scope) if scope["type"] in ("http", "websocket") else None
        if who is not None:  # None: a public path, served to anyone
            found = attributes_for(scope.get("method", "GET"), scope["path"], self.inventory_space)
            if found is not None:
                try:
                    require(self.authorizer(), found[0], who, found[1])
                except StatusError as exc:
                    await self.send_status(scope, send, exc)
                    return
        await self.app(scope, receive, send)
