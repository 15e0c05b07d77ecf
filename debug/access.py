"""Who may do what to a space's pods: kube's attributes for each request, checked by the space's authorizer.

As kube-apiserver authorizes them: reading is ``get``/``list``/``watch`` on ``pods``, a log ``get`` on
``pods/log``, exec, attach and port-forward ``create`` on ``pods/exec``, ``pods/attach``, ``pods/portforward``
(whatever the HTTP method: a WebSocket upgrade is a GET), deleting ``delete`` on ``pods``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import unauthorized
from apiserver.access import Attributes, Authorizer, require
from apiserver.identity import of_request

STREAMS = frozenset({"exec", "attach", "portforward"})
_VERBS = {"GET": "get", "DELETE": "delete", "PUT": "update", "PATCH": "patch", "POST": "create"}


def verb_of(method: str, name: str, subresource: str, watch: bool) -> str:
    """kube's verb for ``method`` on the pods collection (no ``name``), one pod, or a subresource."""
    if subresource in STREAMS:
        return "create"
    if not name and method == "GET":
        return "watch" if watch else "list"
    if not name and method == "DELETE":
        return "deletecollection"
    return _VERBS.get(method, method.lower())


def authorize(authorizer: Authorizer, scope: Mapping[str, Any], space: str, verb: str, namespace: str,
              name: str = "", subresource: str = "") -> None:
    """kube's 403 unless the request's identity may ``verb`` the pods (401 without one)."""
    who = of_request(scope)
    if who is None:
        raise unauthorized()
    require(authorizer, space, who, Attributes(verb, namespace, "", "v1", "pods", subresource, name))
