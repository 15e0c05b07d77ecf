"""Which workload spaces placement records the objects of, and the reads that start recording one.

Placement records a space's objects (``PlacementService._observe``: digests, engine entries, copies' and
conflicts' records) only while something needs them: an EdgePlacement in the space, an APIBinding whose
provider it is (its CRDs), or an explain of a placement in it under way. An empty space, or one holding
objects that nothing places, costs placement no record at all: neither at start (the hub reads only the spaces
that have EdgePlacements) nor as it is written.

When a space's first EdgePlacement arrives, the space's objects are read from the store in one query (a
read thread) before that EdgePlacement is applied. Changes to the space that arrive meanwhile are held, and
applied after the read's rows; each recorded space remembers the revision its read was a snapshot of, and
entries at or below it are skipped (the read already holds them, or newer: the watch bus may deliver a commit
after a read that saw it, and on PostgreSQL another process's commits later still).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from apiserver.controllers.namespaces import NAMESPACES
from apiserver.customresources import CRD_RESOURCE
from apiserver.store import LogRow, store_unavailable
from apiserver.watch import Entry
from placement.results import PLACEMENTS

log = logging.getLogger(__name__)

# The order a space's objects could have been created in, which the engine's bookkeeping assumes (a custom
# resource never arrives before its CRD, nor an object before its Namespace): the store lists them by name.
_CREATED_FIRST = {CRD_RESOURCE: 0, NAMESPACES: 1}
_CREATED_LAST = PLACEMENTS  # its objects are there when a placement meets them

READ_RETRY = 1.0  # seconds before a failed read of a space's objects is tried again

# The objects of a space as of a revision of the store: (revision, live rows). Blocking.
SpaceRead = Callable[[str], tuple[int, list[LogRow]]]
# Runs a blocking read on the read threads.
RunSync = Callable[[SpaceRead, str], Awaitable[tuple[int, list[LogRow]]]]
# Told, on the event loop, that a space's read is done: its rows, then the changes held meanwhile.
Recorded = Callable[[str, list[LogRow], list[Entry]], None]


def in_creation_order(rows: list[LogRow]) -> list[LogRow]:
    """A space's objects read from the store, CRDs first, then Namespaces, then the other objects, EdgePlacements
    last."""
    return sorted(rows, key=lambda row: _CREATED_FIRST.get(row.key.resource, 3 if row.key.resource == _CREATED_LAST
                                                                            else 2))


class SpaceRecording:
    """The recorded spaces, the revisions their reads started from, and the spaces being read."""

    def __init__(self, read: SpaceRead, run_sync: RunSync, recorded: Recorded) -> None:
        self._read = read
        self._run_sync = run_sync
        self._recorded_listener = recorded
        self._snapshots: dict[str, int] = {}  # recorded space -> revision of the read that started it
        self._held: dict[str, list[Entry]] = {}  # space being read -> changes that arrived meanwhile
        self._reads: dict[str, asyncio.Task[None]] = {}  # space -> its read under way

    def recorded(self, space: str) -> bool:
        return space in self._snapshots

    def reading(self, space: str) -> bool:
        return space in self._held

    def spaces(self) -> list[str]:
        return sorted(self._snapshots)

    def hold(self, entry: Entry) -> bool:
        """Keep a change to a space being read for after the read; False if the space is not being read."""
        held = self._held.get(entry.row.key.space)
        if held is None:
            return False
        held.append(entry)
        return True

    def stale(self, entry: Entry) -> bool:
        """Whether a recorded space's read already holds this change (or a newer one of the same object)."""
        return entry.row.revision <= self._snapshots.get(entry.row.key.space, -1)

    def read_now(self, space: str) -> list[LogRow]:
        """Record a space from a blocking read (at startup, before the watch bus is followed)."""
        revision, rows = self._read(space)
        self._snapshots[space] = revision
        return rows

    def start(self, space: str, first: Entry | None) -> None:
        """Read a space's objects on a read thread; ``first`` (the change that asked for them) is held with the
        changes that arrive during the read. On the event loop."""
        held = self._held[space] = [] if first is None else [first]
        task = asyncio.get_running_loop().create_task(self._read_space(space, held), name=f"placement-read-{space}")
        self._reads[space] = task
        task.add_done_callback(lambda done: self._reads.pop(space, None) if self._reads.get(space) is done else None)

    async def wait(self, space: str) -> None:
        """Until the read of the space under way, if any, is done (its objects recorded) or dropped."""
        task = self._reads.get(space)
        if task is not None:
            await asyncio.wait({task})

    def forget(self, space: str) -> None:
        """Stop recording a space (or reading it: a read under way is then dropped when it returns)."""
        self._snapshots.pop(space, None)
        self._held.pop(space, None)

    async def _read_space(self, space: str, held: list[Entry]) -> None:
        while True:
            try:
                revision, rows = await self._run_sync(self._read, space)
                break
            except Exception as exc:
                unreachable = store_unavailable(exc)
                if unreachable is None:
                    log.exception("reading space %s's objects for placement failed; trying again", space)
                else:  # the database is away (a restart): said in a line, not a traceback every second
                    log.warning("reading space %s's objects for placement: %s; trying again", space, unreachable)
                await asyncio.sleep(READ_RETRY)
            if self._held.get(space) is not held:
                return
        if self._held.get(space) is not held:
            return  # forgotten meanwhile (the space was deleted)
        del self._held[space]
        self._snapshots[space] = revision
        self._recorded_listener(space, rows, held)

    async def stop(self) -> None:
        reads, self._reads = list(self._reads.values()), {}
        for task in reads:
            task.cancel()
        for task in reads:
            with contextlib.suppress(asyncio.CancelledError):
                await task
