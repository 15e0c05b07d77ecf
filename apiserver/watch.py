"""Watch fan-out: committed log rows to every interested watcher, decoded and encoded once.

The writer hands each committed batch to :meth:`WatchBus.publish` on the event loop. A ring of recent
entries serves resumes without touching SQL; older resumes read the log (``LogStore.history``) and
fail with :class:`~apiserver.store.Compacted` below the compaction horizon. A watcher that falls too
far behind is cut off (its stream ends) so one slow client never holds memory for everyone; the
client resumes from the last resourceVersion it saw, as client-go does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import orjson

from apiserver.store import INTERNAL_SPACE, Compacted, LogRow, LogStore


def decode_object(row: LogRow) -> dict[str, Any]:
    """The stored object with its resourceVersion (the row's revision) filled in."""
    obj = orjson.loads(row.value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(row.revision)
    return obj


class Entry:
    """One committed change; the decoded object and its wire form are computed at most once."""

    __slots__ = ("_obj", "_recent", "_wire", "row")

    def __init__(self, row: LogRow) -> None:
        self.row = row
        self._obj: dict[str, Any] | None = None
        self._wire: bytes | None = None
        self._recent = True  # keeps its decoded forms (see WatchBus: only the newest entries do)

    @property
    def revision(self) -> int:
        return self.row.revision

    @property
    def type(self) -> str:
        if self.row.deleted:
            return "DELETED"
        return "ADDED" if self.row.created else "MODIFIED"

    def obj(self) -> dict[str, Any]:
        """Shared decoded object: callers must not mutate it."""
        if self._obj is not None:
            return self._obj
        obj = decode_object(self.row)
        if self._recent:
            self._obj = obj
        return obj

    def wire(self) -> bytes:
        if self._wire is not None:
            return self._wire
        wire = orjson.dumps({"type": self.type, "object": self.obj()}) + b"\n"
        if self._recent:
            self._wire = wire
        return wire

    def forget_decoded(self) -> None:
        """Drop the decoded object and wire form and keep none from now on (a later caller decodes again): an old
        entry keeps its row only."""
        self._recent = False
        self._obj = None
        self._wire = None


class WatchOverflow(Exception):
    """The watcher fell too far behind and was disconnected."""


class Subscription:
    def __init__(self, bus: WatchBus, key: tuple[str, str] | None, limit: int) -> None:
        self._bus = bus
        self.key = key
        self.queue: asyncio.Queue[Entry | None] = asyncio.Queue()
        self._limit = limit
        self.overflowed = False

    def offer(self, entry: Entry) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= self._limit:
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(entry)

    async def get(self) -> Entry:
        entry = await self.queue.get()
        if entry is None:
            raise WatchOverflow()
        return entry

    def close(self) -> None:
        self._bus._unsubscribe(self)

    def end(self) -> None:
        """End the watch now (the server is stopping): its client watches again, elsewhere or later."""
        if not self.overflowed:
            self.overflowed = True
            self.queue.put_nowait(None)


RING_SIZE = 50_000  # entries kept for watches resuming from a recent resourceVersion (older ones: the store)
RING_BYTES = 32 * 1024 * 1024  # and at most this many bytes of stored rows
# The newest entries keep their decoded object, shared by every watcher and listener of the change; an older one
# is rarely read again (a watcher that far behind), and its dict costs ten times its row.
DECODED_WINDOW = 1_000


class WatchBus:
    def __init__(self, start_revision: int, ring_size: int = RING_SIZE, subscriber_limit: int = 100_000,
                 ring_bytes: int = RING_BYTES) -> None:
        self._ring: deque[Entry] = deque()
        self._ring_size = ring_size
        self._ring_bytes = ring_bytes
        self._bytes = 0
        # Every row with a revision above this is in the ring (the store's revision at startup,
        # then the newest revision evicted from the ring).
        self._covered_after = start_revision
        self._by_revision: dict[int, Entry] = {}
        self._subs: dict[tuple[str, str], set[Subscription]] = {}
        self._wildcard: set[Subscription] = set()
        self._subscriber_limit = subscriber_limit
        self.latest_revision = start_revision
        self._listeners: list[Callable[[Sequence[Entry]], None]] = []
        self._internal: dict[str, list[Callable[[Sequence[Entry]], None]]] = {}
        self._closing = False

    def close_watches(self) -> None:
        """The server is stopping: end every watch, now and from now on (in-process listeners go on)."""
        self._closing = True
        for subs in (*self._subs.values(), self._wildcard):
            for sub in subs:
                sub.end()

    def add_listener(self, fn: Callable[[Sequence[Entry]], None]) -> None:
        """Synchronous in-process consumers (indexes, controllers' triggers), called per batch."""
        self._listeners.append(fn)

    def add_internal_listener(self, resource: str, fn: Callable[[Sequence[Entry]], None]) -> None:
        """The consumer of one kind of the hub's internal records (never given to watches or other listeners)."""
        self._internal.setdefault(resource, []).append(fn)

    def publish(self, rows: Iterable[LogRow]) -> None:
        entries = []
        internal: dict[str, list[Entry]] = {}
        for row in rows:
            entry = Entry(row)
            if row.key.space == INTERNAL_SPACE:
                self.latest_revision = max(self.latest_revision, row.revision)
                internal.setdefault(row.key.resource, []).append(entry)
                continue
            self._ring.append(entry)
            self._by_revision[row.revision] = entry
            self._bytes += len(row.value)
            if len(self._ring) > DECODED_WINDOW:
                self._ring[-DECODED_WINDOW - 1].forget_decoded()
            while len(self._ring) > self._ring_size or self._bytes > self._ring_bytes:
                old = self._ring.popleft()
                self._by_revision.pop(old.revision, None)
                self._bytes -= len(old.row.value)
                self._covered_after = old.revision
            self.latest_revision = max(self.latest_revision, row.revision)
            entries.append(entry)
            for sub in self._subs.get((row.key.space, row.key.resource), ()):
                sub.offer(entry)
            for sub in self._wildcard:
                sub.offer(entry)
        for fn in self._listeners:
            fn(entries)
        for resource, records in internal.items():
            for fn in self._internal.get(resource, ()):
                fn(records)

    def subscribe(self, space: str | None = None, resource: str | None = None) -> Subscription:
        """Subscribe to one kind in one space, or (both None) to everything."""
        key = (space, resource) if space is not None and resource is not None else None
        sub = Subscription(self, key, self._subscriber_limit)
        if self._closing:
            sub.end()
        if key is None:
            self._wildcard.add(sub)
        else:
            self._subs.setdefault(key, set()).add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        if sub.key is None:
            self._wildcard.discard(sub)
            return
        subs = self._subs.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.key]

    def watcher_count(self) -> int:
        return len(self._wildcard) + sum(len(s) for s in self._subs.values())

    def entry(self, revision: int) -> Entry | None:
        return self._by_revision.get(revision)

    def since(self, after: int, space: str | None, resource: str) -> list[Entry] | None:
        """Entries after ``after`` for one kind (in one space, or with None in all) from the ring, or None if the
        ring does not reach back."""
        if after < self._covered_after:
            return None
        out = []
        for entry in reversed(self._ring):
            if entry.revision <= after:
                break
            k = entry.row.key
            if (space is None or k.space == space) and k.resource == resource:
                out.append(entry)
        out.reverse()
        return out


async def previous(bus: WatchBus, store: LogStore, row: LogRow, read: Callable[..., Any]) -> Entry | None:
    """The change before ``row`` of the same key: from the ring, else read from the store (``read`` runs
    ``store.get_revision`` off the event loop). None when ``row`` created the key or the row is compacted away.

    A selector watch needs it to tell a change that took an object out of the selector (DELETED for that watcher)
    from one that never matched; the ring holds a busy hub's last minutes only, an object's previous change may be
    far older."""
    if row.created or row.prev_revision <= 0:
        return None
    entry = bus.entry(row.prev_revision)
    if entry is not None:
        return entry
    prev = await read(store.get_revision, row.prev_revision)
    return Entry(prev) if prev is not None else None


async def changes(bus: WatchBus, store: LogStore, space: str | None, resource: str, after: int,
                  read_history: Callable[..., Any]) -> AsyncIterator[Entry]:
    """Every change of one kind in one space (None: in every space, for an APIExport's endpoint) after revision
    ``after``, then live changes, in order.

    Subscribes before reading history so nothing committed in between is missed; duplicates are
    dropped by revision. ``read_history`` runs ``store.history`` off the event loop.
    Raises Compacted (too old) or WatchOverflow (too slow).
    """
    compacted = store.compacted_revision
    if after < compacted:
        # The ring may still hold these changes, but the contract is the compaction horizon:
        # a client resuming from before it must relist, whichever replica it talks to.
        raise Compacted(after, compacted)
    # Every space: the bus has no index by kind alone, so this watcher is offered every change and keeps its kind's.
    sub = bus.subscribe(space, resource) if space is not None else bus.subscribe()
    try:
        last = after
        backlog = bus.since(after, space, resource)
        if backlog is None:
            while True:
                rows = await read_history(store.history, last, space=space, resource=resource, limit=2000)
                for row in rows:
                    entry = bus.entry(row.revision) or Entry(row)
                    last = entry.revision
                    yield entry
                if len(rows) < 2000:
                    break
        else:
            for entry in backlog:
                last = entry.revision
                yield entry
        while True:
            entry = await sub.get()
            if entry.revision <= last or entry.row.key.resource != resource:
                continue
            last = entry.revision
            yield entry
    finally:
        sub.close()
