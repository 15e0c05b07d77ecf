"""Fault injection per simulated cluster: refused connections, added latency, failing writes.

Owns the fault table (set at startup from ``--faults-file`` and changed through the admin endpoint
``/sim/v1/clusters/<name>/faults``) and the ASGI middleware that applies it to every request under
``/clusters/<name>``:

* ``refuse``: the connection is closed without a response, as if the cluster's API server were
  unreachable, so clients see a connection error (client-go: ``EOF``/``connection reset``; httpx:
  ``RemoteProtocolError``), never a 5xx. ASGI has no message for "abort", and uvicorn answers 500 to
  an application that raises or returns without a response; so the middleware aborts the transport
  of uvicorn's request cycle (reached through the ``send`` callable it was given, the only handle
  on the connection) and then waits for the disconnect, after which uvicorn sends nothing. HTTP/1.1
  carries one request per connection at a time, so only that request is affected. Requests already
  in flight (watches) are cut the same way when ``refuse`` is switched on. Under a server whose
  ``send`` does not expose its transport, the middleware falls back to ``503`` with ``Retry-After``.
* ``latencySeconds``: every request waits that long before it is handled.
* ``failWrites``: POST, PUT, PATCH and DELETE get a ``500 InternalError`` Status; reads still work.
* ``cpuLoad``: not a fault but a knob kept with them: the simulated CPU use of each HPA's target in the cluster,
  in percent of one pod's request, from which the simulated HPA controller scales (:mod:`sim.controllers.hpa`).

WebSocket upgrades (``pods/exec``, ``attach``, ``portforward``) take ``refuse`` and ``latencySeconds`` the same
way; sessions in flight are cut when ``refuse`` is switched on.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from apimachinery.errors import StatusError

log = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CLUSTERS_PREFIX = "/clusters/"
# How long an aborted request waits for the server to notice the closed connection.
_DISCONNECT_WAIT = 5.0


class FaultError(ValueError):
    """A faults document is malformed."""


@dataclass(frozen=True)
class Faults:
    refuse: bool = False
    latency_seconds: float = 0.0
    fail_writes: bool = False
    # Container images (glob patterns) the cluster's kubelets cannot pull: their pods stay Pending in
    # ErrImagePull / ImagePullBackOff, as with a missing image or tag.
    image_pull_failures: tuple[str, ...] = ()
    # Simulated CPU use of each HPA's target, in percent of one pod's request (None: no metrics).
    cpu_load: float | None = None

    @property
    def active(self) -> bool:
        return self.refuse or self.latency_seconds > 0 or self.fail_writes or bool(self.image_pull_failures) \
            or self.cpu_load is not None

    def pull_fails(self, image: str) -> bool:
        return any(fnmatch.fnmatchcase(image, pattern) for pattern in self.image_pull_failures)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"refuse": self.refuse, "latencySeconds": self.latency_seconds,
                               "failWrites": self.fail_writes}
        if self.image_pull_failures:
            out["imagePullFailures"] = list(self.image_pull_failures)
        if self.cpu_load is not None:
            out["cpuLoad"] = self.cpu_load
        return out

    @classmethod
    def from_json(cls, doc: Any) -> Faults:
        """Parse ``{"refuse": bool, "latencySeconds": number, "failWrites": bool, "imagePullFailures":
        [glob, …], "cpuLoad": number}``; absent fields are off."""
        if not isinstance(doc, dict):
            raise FaultError("faults must be an object with refuse, latencySeconds, failWrites, "
                             "imagePullFailures and cpuLoad")
        unknown = sorted(set(doc) - {"refuse", "latencySeconds", "failWrites", "imagePullFailures", "cpuLoad"})
        if unknown:
            raise FaultError(f"unknown fault field(s): {', '.join(unknown)}")
        refuse, latency, fail_writes = doc.get("refuse", False), doc.get("latencySeconds", 0), doc.get(
            "failWrites", False)
        if not isinstance(refuse, bool) or not isinstance(fail_writes, bool):
            raise FaultError("refuse and failWrites must be booleans")
        if not _non_negative(latency):
            raise FaultError("latencySeconds must be a non-negative number")
        load = doc.get("cpuLoad")
        if load is not None and not _non_negative(load):
            raise FaultError("cpuLoad must be a non-negative number (percent of one pod's CPU request)")
        pulls = doc.get("imagePullFailures", [])
        if not isinstance(pulls, list) or not all(isinstance(p, str) and p for p in pulls):
            raise FaultError("imagePullFailures must be a list of image patterns (globs, e.g. \"*:broken\")")
        return cls(refuse=refuse, latency_seconds=float(latency), fail_writes=fail_writes,
                   image_pull_failures=tuple(pulls), cpu_load=None if load is None else float(load))


def _non_negative(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value >= 0


def load_faults_file(path: Path, clusters: Iterable[str]) -> dict[str, Faults]:
    """``--faults-file``: a YAML or JSON mapping of cluster name to faults."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise FaultError(f"cannot read faults file {path}: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise FaultError(f"faults file {path} must map cluster names to faults")
    known = set(clusters)
    out: dict[str, Faults] = {}
    for name, spec in doc.items():
        if name not in known:
            raise FaultError(f"faults file {path} names unknown cluster {name!r}")
        try:
            out[name] = Faults.from_json(spec)
        except FaultError as exc:
            raise FaultError(f"faults file {path}, cluster {name}: {exc}") from None
    return out


def cluster_of(path: str) -> str | None:
    """``/clusters/wec1/api/v1/pods`` → ``wec1``."""
    if not path.startswith(CLUSTERS_PREFIX):
        return None
    name = path[len(CLUSTERS_PREFIX):].split("/", 1)[0]
    return name or None


def _transport_of(send: Any) -> Any:
    """uvicorn's transport for the request whose ``send`` this is (None under another server)."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    return transport if callable(getattr(transport, "abort", None)) else None


class FaultTable:
    """Current faults per cluster, and the connections in flight to each (to cut on ``refuse``)."""

    def __init__(self, clusters: Iterable[str], initial: dict[str, Faults] | None = None) -> None:
        self._faults: dict[str, Faults] = {name: Faults() for name in clusters}
        self._faults.update(initial or {})
        self._inflight: dict[str, set[Any]] = {}

    def __contains__(self, cluster: str) -> bool:
        return cluster in self._faults

    def get(self, cluster: str) -> Faults:
        return self._faults.get(cluster, Faults())

    def items(self) -> list[tuple[str, Faults]]:
        return list(self._faults.items())

    def set(self, cluster: str, faults: Faults) -> None:
        if cluster not in self._faults:
            raise KeyError(cluster)
        self._faults[cluster] = faults
        if faults.refuse:
            cut = self._inflight.pop(cluster, set())
            for transport in cut:
                transport.abort()
            if cut:
                log.info("cluster %s refuses connections: cut %d in flight", cluster, len(cut))

    def track(self, cluster: str, transport: Any) -> Callable[[], None]:
        self._inflight.setdefault(cluster, set()).add(transport)

        def untrack() -> None:
            live = self._inflight.get(cluster)
            if live is not None:
                live.discard(transport)
                if not live:
                    del self._inflight[cluster]

        return untrack


async def _send_status(send: Any, err: StatusError, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = orjson.dumps(err.to_status())
    await send({"type": "http.response.start", "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def _abort(receive: Any, transport: Any) -> None:
    """Close the connection without a response and wait until the server has noticed."""
    transport.abort()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DISCONNECT_WAIT):
            while (await receive())["type"] not in ("http.disconnect", "websocket.disconnect"):
                pass


class FaultInjection:
    """ASGI middleware applying the fault table to requests under ``/clusters/<name>``."""

    def __init__(self, app: Callable[..., Any], table: FaultTable) -> None:
        self.app = app
        self.table = table

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        cluster = cluster_of(scope["path"]) if scope["type"] in ("http", "websocket") else None
        if cluster is None or cluster not in self.table:
            await self.app(scope, receive, send)
            return
        faults = self.table.get(cluster)
        transport = _transport_of(send)
        if faults.refuse:
            if transport is not None:
                await _abort(receive, transport)
            elif scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1013})
            else:
                await _send_status(send, StatusError(503, "ServiceUnavailable", f"cluster {cluster} is refusing "
                                                     "connections (fault injection)", retry_after=1),
                                   [(b"retry-after", b"1")])
            return
        if faults.latency_seconds > 0:
            await asyncio.sleep(faults.latency_seconds)
        if faults.fail_writes and scope["type"] == "http" and scope["method"] in WRITE_METHODS:
            await _send_status(send, StatusError(500, "InternalError", "Internal error occurred: injected write "
                                                 f"failure in cluster {cluster} (fault injection)"))
            return
        if transport is None:
            await self.app(scope, receive, send)
            return
        untrack = self.table.track(cluster, transport)
        try:
            await self.app(scope, receive, send)
        finally:
            untrack()
