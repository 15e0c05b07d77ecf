"""The hub's internal records of one kind, kept in the shared log so that every hub process has them.

What clusters send (status reports, upsynced copies) reaches whichever hub process their syncer dialled, but
every process must know it: the lease holder writes statuses from it, and any process may serve the next
request. Such state is written as records in the log's internal pseudo-space (never served as objects), one
per key, replaced by the next write and deleted when forgotten; every process, the writer included, takes
each record in from its log feed, before the write is acknowledged. After a restart they are read back.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from apiserver.service import Objects
from apiserver.store import INTERNAL_SPACE, Key, PreconditionFailed, Write
from apiserver.watch import Entry

log = logging.getLogger(__name__)


class Records:
    def __init__(self, objects: Objects, resource: str) -> None:
        self.objects = objects
        self.resource = resource
        self._background: set[asyncio.Task[Any]] = set()

    def key(self, *parts: str) -> Key:
        # A digest: a SyncTarget name and an object reference together outgrow the log's name column.
        return Key(INTERNAL_SPACE, self.resource, "", hashlib.sha256("\0".join(parts).encode()).hexdigest())

    def load(self) -> list[bytes]:
        """Every record's value (blocking; call at startup)."""
        return [row.value for row in self.objects.rows_in(INTERNAL_SPACE, self.resource)]

    def listen(self, taken: Callable[[Sequence[Entry]], None]) -> None:
        """Hear of every record written or deleted by any process (a deleted one's entry holds its last value)."""
        self.objects.bus.add_internal_listener(self.resource, taken)

    async def write(self, changes: Sequence[tuple[Key, bytes, bool]]) -> None:
        """Write or delete (``True``) records; raises if the log refused any (deleting one that is gone is fine)."""
        if not changes:
            return
        writes = [Write(key, value, deleted=deleted) for key, value, deleted in changes]
        for result in await self.objects.writer.write_many(writes):
            if isinstance(result, BaseException) and not isinstance(result, PreconditionFailed):
                raise result

    def write_soon(self, changes: Sequence[tuple[Key, bytes, bool]]) -> None:
        """``write`` without waiting for it (from synchronous code; a failure leaves a stale record behind)."""
        task = asyncio.get_running_loop().create_task(self.write(changes))
        self._background.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s records not written: %s", self.resource, task.exception())
