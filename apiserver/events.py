"""Recording Kubernetes Events (core/v1) about objects of a space, deduplicated and rate-limited.

Like client-go's EventRecorder and EventCorrelator: an Event with the same involved object, type, reason,
message and source as an earlier one bumps that Event's ``count`` and ``lastTimestamp`` instead of making a
new object, and each (object, source) has a token bucket (kube's spam filter: a burst, then one Event per
interval), so nothing flapping can flood a space. Events about namespaced objects go to the object's
namespace; about cluster-scoped ones to ``default``, as kube-apiserver's recorders do. ``kubectl describe``
and ``kubectl get events`` show them. Used by the hub (the story of placed objects, Events forwarded from
clusters) and by the simulated clusters' kubelets and controllers.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions, now_rfc3339

log = logging.getLogger(__name__)

MANAGER = "spacehub-events"
BURST = 25  # Events per (object, source) before the bucket throttles (client-go's spam filter burst)
REFILL_SECONDS = 10.0  # one more Event per this many seconds after the burst
CORRELATED = 4096  # deduplication keys remembered (the oldest are forgotten first)


@dataclass(frozen=True)
class Involved:
    """The object an Event is about, as ``involvedObject`` names it, and its space."""

    space: str
    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str


@dataclass
class _Bucket:
    tokens: float
    last: float


class EventRecorder:
    def __init__(self, objects: Objects, catalog: Catalog, component: str, *, manager: str = MANAGER,
                 burst: int = BURST, refill_seconds: float = REFILL_SECONDS) -> None:
        self.objects = objects
        self.catalog = catalog
        self.component = component  # the default source.component
        self.manager = manager
        self.burst = burst
        self.refill_seconds = refill_seconds
        self._buckets: dict[tuple[tuple[str, str, str], str], _Bucket] = {}
        # (space, namespace, uid, type, reason, message, component, host) -> (Event name, count)
        self._seen: dict[tuple[str, ...], tuple[str, int]] = {}

    async def record(self, involved: Involved, event_type: str, reason: str, message: str, *,
                     host: str = "", count: int | None = None, first: str | None = None,
                     last: str | None = None, component: str = "") -> bool:
        """Record one Event (``count``/``first``/``last``: another recorder's own tally of an Event passed
        on); False when the object's bucket throttled it or the space refused it."""
        component = component or self.component
        where = (involved.space, involved.namespace, involved.name)
        if not self._take(where, f"{component}/{host}"):
            log.debug("event %s %s on %s throttled", reason, message, where)
            return False
        namespace = involved.namespace or "default"
        space = involved.space
        key = (space, namespace, involved.uid, event_type, reason, message[:1024], component, host)
        now = now_rfc3339()
        known = self._seen.pop(key, None)
        try:
            if known is not None:
                name, seen_count = known
                new_count = max(count or 0, seen_count + 1)
                updated = await self._bump(space, namespace, name, new_count, last or now)
                if updated:
                    self._remember(key, name, new_count)
                    return True
            name = f"{involved.name}.{secrets.token_hex(8)}"
            body = {"apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": name, "namespace": namespace},
                    "involvedObject": {"kind": involved.kind, "namespace": involved.namespace, "name": involved.name,
                                       "uid": involved.uid, "apiVersion": involved.api_version},
                    "reason": reason, "message": message, "type": event_type,
                    "source": {"component": component, **({"host": host} if host else {})},
                    "firstTimestamp": first or now, "lastTimestamp": last or now, "count": count or 1,
                    "reportingComponent": component, "reportingInstance": host or component}
            if not involved.namespace:
                del body["involvedObject"]["namespace"]
            await self.objects.create(space, self._events(space), namespace, body,
                                      WriteOptions(manager=self.manager, field_validation="Ignore"))
            self._remember(key, name, count or 1)
            return True
        except StatusError as exc:
            # A namespace being deleted, a space going away: the Event has nowhere to go; nothing to retry.
            log.info("event %s on %s not recorded: %s", reason, where, exc)
            return False

    async def _bump(self, space: str, namespace: str, name: str, count: int, last: str) -> bool:
        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            obj["count"] = count
            obj["lastTimestamp"] = last
            return obj

        try:
            await self.objects.guaranteed_update(space, self._events(space), namespace, name, compute,
                                                 WriteOptions(manager=self.manager, field_validation="Ignore"))
            return True
        except StatusError as exc:
            if exc.code == 404:
                return False  # someone deleted it (or it expired): start a new one
            raise

    def _events(self, space: str) -> Any:
        rtype = self.catalog.by_group_resource(space, "events")
        assert rtype is not None
        return rtype

    def _take(self, where: tuple[str, str, str], source: str) -> bool:
        now = time.monotonic()
        bucket = self._buckets.get((where, source))
        if bucket is None:
            bucket = self._buckets[(where, source)] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) / self.refill_seconds)
        bucket.last = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _remember(self, key: tuple[str, ...], name: str, count: int) -> None:
        self._seen[key] = (name, count)
        while len(self._seen) > CORRELATED:
            del self._seen[next(iter(self._seen))]

    def forget(self, space: str, namespace: str, name: str) -> None:
        """The object is gone: its buckets go with it (its Events stay until someone deletes them)."""
        for key in [k for k in self._buckets if k[0] == (space, namespace, name)]:
            del self._buckets[key]
