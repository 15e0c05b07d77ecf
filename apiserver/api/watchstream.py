"""Watch responses: newline-delimited JSON events over a chunked HTTP response.

Implements what client-go's reflector and kubectl expect: synthetic ADDED events for RV ""/"0",
resume from a resourceVersion, ``sendInitialEvents`` with the ``k8s.io/initial-events-end``
bookmark, periodic bookmarks when allowed, label-selector transitions (an object leaving the
selector is DELETED for this watcher) and 410 Expired as an in-stream ERROR event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.datastructures import QueryParams

from apimachinery import errors
from apimachinery.fieldselectors import FieldSelector
from apimachinery.selectors import LabelSelector
from apiserver.api.params import query_bool
from apiserver.api.tables import to_table
from apiserver.listing import parse_resource_version
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.store import Compacted
from apiserver.watch import Entry, WatchOverflow, changes, previous

BOOKMARK_INTERVAL = 10.0
DEFAULT_TIMEOUT = 1800.0


@dataclass
class WatchRequest:
    space: str
    rtype: ResourceType
    namespace: str | None
    labels: LabelSelector | None
    fields: FieldSelector | None
    resource_version: str
    send_initial_events: bool
    bookmarks: bool
    timeout: float
    table_version: str | None
    include_object: str


def _event(kind: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


class WatchStream:
    def __init__(self, objects: Objects, req: WatchRequest) -> None:
        self.objects = objects
        self.req = req
        self._first_table = True

    def _matches(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.req.namespace is not None and meta.get("namespace", "") != self.req.namespace:
            return False
        if self.req.labels is not None and not self.req.labels.matches(meta.get("labels")):
            return False
        return self.req.fields is None or self.req.fields.matches(obj)

    def _encode(self, kind: str, obj: dict[str, Any], entry: Entry | None = None) -> bytes:
        if self.req.table_version is not None and kind != "BOOKMARK" and kind != "ERROR":
            table = to_table(self.req.rtype, [obj], version=self.req.table_version,
                             include=self.req.include_object, headers=self._first_table)
            self._first_table = False
            return _event(kind, table)
        served_version = self.req.rtype.api_version
        if entry is not None and kind == entry.type and obj.get("apiVersion") == served_version \
                and self.req.rtype.conversion is None and self.req.rtype.conversion_webhook is None:
            return entry.wire()
        if obj.get("apiVersion") != served_version:
            # Stored in another version of the same kind (conversion None): only apiVersion differs.
            obj = {**obj, "apiVersion": served_version}
        return _event(kind, obj)

    def _bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _event("BOOKMARK", {"kind": self.req.rtype.kind, "apiVersion": self.req.rtype.api_version,
                                   "metadata": meta})

    async def _served(self, entry: Entry) -> dict[str, Any]:
        rtype = self.req.rtype
        if rtype.conversion_webhook is not None:
            # The stored object is shared with other watchers: the converter answers a new one.
            return await self.objects.converter.served_one(rtype, entry.obj())
        return entry.obj() if rtype.conversion is None else rtype.conversion.to_served(entry.obj())

    async def _translate(self, entry: Entry) -> tuple[str, dict[str, Any]] | None:
        """Apply the watcher's filters, turning selector transitions into ADDED/DELETED."""
        obj = await self._served(entry)
        now = self._matches(obj)
        if entry.type != "MODIFIED" or (self.req.labels is None and self.req.fields is None):
            return (entry.type, obj) if now else None
        prev_entry = await previous(self.objects.bus, self.objects.store, entry.row, self.objects.run_sync)
        # Unknown (compacted away): taken as matching, so an object leaving the selector is never missed; a DELETED
        # for an object the watcher does not hold is a no-op for it, a missed one leaves it holding a stale object.
        before = self._matches(await self._served(prev_entry)) if prev_entry is not None else True
        if now and before:
            return "MODIFIED", obj
        if now:
            return "ADDED", obj
        if before:
            return "DELETED", obj
        return None

    def _changes(self, start: int) -> AsyncIterator[Entry]:
        """What the watch follows after revision ``start``: its kind in its space."""
        return changes(self.objects.bus, self.objects.store, self.req.space, self.req.rtype.storage_resource, start,
                       self.objects.run_sync)

    async def _initial(self) -> tuple[int, list[dict[str, Any]]]:
        result = await self.objects.list(self.req.space, self.req.rtype, self.req.namespace,
                                         labels=self.req.labels, fields=self.req.fields)
        return int(result.resource_version), result.items

    async def body(self) -> AsyncIterator[bytes]:
        req = self.req
        start: int
        initial_items: list[dict[str, Any]] = []
        rv = req.resource_version
        try:
            if req.send_initial_events or rv in ("", "0"):
                start, initial_items = await self._initial()
            else:
                start = parse_resource_version(rv)
        except errors.StatusError as exc:
            yield _event("ERROR", exc.to_status())
            return
        for obj in initial_items:
            yield self._encode("ADDED", obj)
        if req.send_initial_events:
            yield self._bookmark(start, initial_end=True)

        queue: asyncio.Queue[Entry | BaseException] = asyncio.Queue()

        async def produce() -> None:
            try:
                async for entry in self._changes(start):
                    queue.put_nowait(entry)
            except (Compacted, WatchOverflow) as exc:
                queue.put_nowait(exc)

        producer = asyncio.create_task(produce())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + req.timeout
        last_seen = start
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return
                wait = min(remaining, BOOKMARK_INTERVAL) if req.bookmarks else remaining
                try:
                    item = await asyncio.wait_for(queue.get(), timeout=wait)
                except TimeoutError:
                    if req.bookmarks and loop.time() < deadline:
                        yield self._bookmark(last_seen)
                    continue
                if isinstance(item, Compacted):
                    yield _event("ERROR", errors.expired(
                        f"too old resource version: {item.requested} ({item.compacted})").to_status())
                    return
                if isinstance(item, WatchOverflow):
                    return
                assert isinstance(item, Entry)
                last_seen = item.revision
                try:
                    translated = await self._translate(item)
                except errors.StatusError as exc:
                    # A conversion webhook that fails ends the watch; the client watches again from last_seen.
                    yield _event("ERROR", exc.to_status())
                    return
                if translated is not None:
                    yield self._encode(translated[0], translated[1], item)
        finally:
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer


def watch_request(q: QueryParams, space: str, rtype: ResourceType, namespace: str | None,
                  labels: LabelSelector | None, fields: FieldSelector | None, table_version: str | None,
                  include_object: str) -> WatchRequest:
    """A watch as its query asks for it (``resourceVersion``, ``sendInitialEvents``, bookmarks, timeout)."""
    send_initial = query_bool(q, "sendInitialEvents")
    if send_initial and q.get("resourceVersionMatch") != "NotOlderThan":
        raise errors.invalid("ListOptions", "meta.k8s.io", "", [errors.Cause(
            "FieldValueForbidden", "sendInitialEvents requires setting resourceVersionMatch to "
            "NotOlderThan", "resourceVersionMatch")])
    return WatchRequest(space, rtype, namespace, labels, fields, q.get("resourceVersion") or "", send_initial,
                        query_bool(q, "allowWatchBookmarks"), watch_timeout(q.get("timeoutSeconds")), table_version,
                        include_object)


def watch_timeout(value: str | None, default: float = DEFAULT_TIMEOUT) -> float:
    if not value:
        return default
    try:
        return max(0.0, float(int(value)))
    except ValueError as exc:
        raise errors.bad_request(f"invalid timeoutSeconds {value!r}") from exc


