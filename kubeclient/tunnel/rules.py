"""What the tunnel may carry into a workload cluster: reading pods, and the pod subresources used to debug them.

Allowed, and nothing else (both ends check every request with these functions; a refusal is a 403 Status):

* ``GET /api/v1/pods`` and ``GET /api/v1/namespaces/{ns}/pods`` — list, or watch with ``watch=true``;
* ``GET /api/v1/namespaces/{ns}/pods/{name}`` and ``…/pods/{name}/log`` (``follow=true`` streams);
* WebSocket upgrades of ``…/pods/{name}/exec``, ``…/attach`` and ``…/portforward``;
* ``DELETE /api/v1/namespaces/{ns}/pods/{name}`` — one pod, as ``kubectl delete pod`` restarts a replica that
  its controller then replaces (exec already reaches further into a pod than deleting it does);
* ``GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods`` — the pods' CPU and memory use (metrics-server's
  PodMetrics list, no watch), which the hub's fleet autoscaler measures.

Paths are matched whole against names as Kubernetes spells them (DNS-1123), so ``..``, ``//``, percent-encoded
characters, trailing slashes and other resources never match. Query parameters are allowed by name for each
kind of request: one that could widen a request (``insecureSkipTLSVerifyBackend`` on logs) or that the two
ends' parsers might read differently (``;`` separators, a repeated parameter other than ``command`` or
``ports``, a field without ``=``) is refused. Request headers other than ``Accept``, ``Content-Type`` and
``User-Agent`` are dropped (the syncer authenticates to its cluster with its own credentials).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import StatusError, forbidden

_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_POD = re.compile(rf"/api/v1/namespaces/(?P<ns>{_LABEL})/pods"
                  rf"(?:/(?P<name>{_LABEL}(?:\.{_LABEL})*)(?:/(?P<sub>log|exec|attach|portforward))?)?")
_ALL_PODS = "/api/v1/pods"
_POD_METRICS = re.compile(rf"/apis/metrics\.k8s\.io/v1beta1/namespaces/(?P<ns>{_LABEL})/pods")
# RFC 3986 query characters without ";" (Go's url.ParseQuery refuses it, Python's parse_qsl does not split on it).
_QUERY_CHARS = re.compile(r"[A-Za-z0-9\-._~%!$&'()*+,/:=?@]*")
_SUBPROTOCOL = re.compile(r"[A-Za-z0-9.+/_-]{1,64}")  # v5.channel.k8s.io, SPDY/3.1+portforward.k8s.io
MAX_NAME = 253
MAX_PARAMS = 64
MAX_SUBPROTOCOLS = 8
MAX_REQUEST_BODY = 64 * 1024  # a DELETE's DeleteOptions
REPEATABLE = frozenset({"command", "ports"})

_LIST = frozenset({"labelSelector", "fieldSelector", "watch", "resourceVersion", "resourceVersionMatch",
                   "timeoutSeconds", "limit", "continue", "allowWatchBookmarks", "sendInitialEvents", "pretty"})
PARAMS: dict[str, frozenset[str]] = {
    "list": _LIST,
    "metrics": frozenset({"labelSelector", "fieldSelector", "pretty"}),
    "get": frozenset({"resourceVersion", "pretty"}),
    "log": frozenset({"container", "follow", "previous", "sinceSeconds", "sinceTime", "timestamps", "tailLines",
                      "limitBytes", "pretty"}),
    "exec": frozenset({"command", "container", "stdin", "stdout", "stderr", "tty"}),
    "attach": frozenset({"container", "stdin", "stdout", "stderr", "tty"}),
    "portforward": frozenset({"ports"}),
    "delete": frozenset({"gracePeriodSeconds", "propagationPolicy", "dryRun", "pretty"}),
}
UPGRADED = frozenset({"exec", "attach", "portforward"})
REQUEST_HEADERS = frozenset({"accept", "content-type", "user-agent"})
RESPONSE_HEADERS = frozenset({"content-type", "cache-control", "warning", "retry-after", "x-content-type-options",
                              "audit-id"})


@dataclass(frozen=True)
class Allowed:
    """An allowed request: what it does (a key of ``PARAMS``) and to which pods."""

    action: str
    namespace: str  # "" for every namespace
    name: str  # "" for a list


def shown(path: str) -> str:
    """A path as logs and messages may show it: bounded, printable."""
    text = path if len(path) <= 200 else path[:200] + "…"
    return text.encode("ascii", "backslashreplace").decode()


def refused(method: str, path: str, why: str) -> StatusError:
    return forbidden(f"the tunnel to the cluster does not carry {method} {shown(path)}: {why}")


def check(method: str, path: str, query: str, *, upgrade: bool) -> Allowed:
    """The allowed request ``method path?query`` is (``upgrade``: a WebSocket), or a 403 StatusError saying why
    not. ``path`` and ``query`` are as sent on the wire (percent-encoded)."""
    allowed = _route(method, path, upgrade)
    names = _param_names(method, path, query)
    unknown = sorted(set(names) - PARAMS[allowed.action])
    if unknown:
        raise refused(method, path, f"query parameter {', '.join(unknown)} is not allowed here")
    repeated = sorted({n for n in names if names.count(n) > 1} - REPEATABLE)
    if repeated:
        raise refused(method, path, f"query parameter {', '.join(repeated)} is repeated")
    return allowed


def _route(method: str, path: str, upgrade: bool) -> Allowed:
    metrics = _POD_METRICS.fullmatch(path)
    if path == _ALL_PODS:
        allowed = Allowed("list", "", "")
    elif metrics is not None:
        allowed = Allowed("metrics", metrics.group("ns"), "")
    else:
        match = _POD.fullmatch(path)
        if match is None:
            raise refused(method, path, "only pods, their log, exec, attach and portforward, and their metrics are "
                          "reachable")
        name = match.group("name") or ""
        if len(name) > MAX_NAME:
            raise refused(method, path, "the pod name is too long")
        action = match.group("sub") or ("get" if name else "list")
        if method == "DELETE" and action == "get":
            action = "delete"
        allowed = Allowed(action, match.group("ns"), name)
    if upgrade != (allowed.action in UPGRADED):
        raise refused(method, path, "exec, attach and portforward are WebSocket upgrades, and nothing else is"
                      if upgrade else "exec, attach and portforward must be WebSocket upgrades")
    expected = "DELETE" if allowed.action == "delete" else "GET"
    if method != expected:
        raise refused(method, path, f"the verb must be {expected}")
    return allowed


def _param_names(method: str, path: str, query: str) -> list[str]:
    if not query:
        return []
    if not _QUERY_CHARS.fullmatch(query):
        raise refused(method, path, "the query string has characters a query parameter never needs")
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True,
                                       max_num_fields=MAX_PARAMS)
    except ValueError:
        raise refused(method, path, "the query string is malformed or too long") from None
    return [name for name, _value in pairs]


def check_subprotocols(subprotocols: Any) -> list[str]:
    """The WebSocket subprotocols a client offered, if they are a list of well-formed names (403 otherwise)."""
    if not isinstance(subprotocols, list | tuple) or len(subprotocols) > MAX_SUBPROTOCOLS or \
            not all(isinstance(p, str) and _SUBPROTOCOL.fullmatch(p) for p in subprotocols):
        raise forbidden("the tunnel does not carry these WebSocket subprotocols")
    return list(subprotocols)


def forwarded(headers: Iterable[tuple[str, str]], allowed: frozenset[str]) -> list[tuple[str, str]]:
    """The headers of ``allowed`` names (lower-case), with values that cannot split a header."""
    return [(name, value) for name, value in headers
            if name.lower() in allowed and "\r" not in value and "\n" not in value and len(value) <= 4096][:32]
