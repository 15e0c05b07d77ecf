"""A :class:`~apiserver.controllers.WorkQueue` with several workers, for controllers of many clusters.

A key is never handled by two workers at once: a key added while it is being handled is queued again
when its handling ends (client-go's workqueue "dirty while processing" rule), so a handler always sees
every change that happened before it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable

from apiserver.controllers import WorkQueue

log = logging.getLogger(__name__)


class ConcurrentWorkQueue(WorkQueue):
    def __init__(self, name: str, workers: int = 4) -> None:
        super().__init__(name)
        self.workers = workers
        self._processing: set[Hashable] = set()
        self._dirty: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        self._workers: list[asyncio.Task[None]] = []

    def add(self, key: Hashable) -> None:
        if key in self._processing:
            self._dirty.add(key)
            return
        super().add(key)

    def start(self) -> None:
        self._workers = [asyncio.create_task(self._work(), name=f"sim-{self.name}-{i}") for i in range(self.workers)]

    async def stop(self) -> None:
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            self._pending.discard(key)
            self._processing.add(key)
            try:
                retry = await self.handle(key)
                self._failures.pop(key, None)
                if retry:
                    self.add_after(key, 0.2)
            except asyncio.CancelledError:
                raise
            except Exception:
                n = self._failures.get(key, 0) + 1
                self._failures[key] = n
                log.exception("%s: processing %s failed (attempt %d)", self.name, key, n)
                self.add_after(key, min(30.0, 0.1 * 2**n))
            finally:
                self._processing.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    super().add(key)
