"""The work queue of every controller: the API server's (namespaces, garbage collection, CRDs), spaces' and the
simulator's kwok-style ones.

Keys are de-duplicated while they wait. ``workers`` tasks take them (one by default); a key is never handled
by two workers at once: a key added while it is being handled is queued again when its handling ends
(client-go's workqueue "dirty while processing" rule), so a handler always sees every change that happened
before it started. A failed key is retried with backoff (``kubeclient.backoff``, without jitter) and never
stops the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Protocol

from kubeclient.backoff import Backoff

log = logging.getLogger(__name__)
RETRY_SECONDS = 0.2  # a handler that asks to be called again (it returned True)
FAILURE_BACKOFF = (0.2, 30.0)  # the first and the longest delay after a handler raised


class Gate(Protocol):
    """What a singleton waits for before it acts (the lease, where several hub processes share a database)."""

    @property
    def held(self) -> bool: ...

    async def wait(self) -> None: ...


class WorkQueue:
    """A de-duplicating queue of keys processed by ``handle``, by ``workers`` tasks."""

    def __init__(self, name: str, workers: int = 1) -> None:
        self.name = name
        self.workers = workers
        self._pending: set[Hashable] = set()
        self._handling: set[Hashable] = set()
        self._dirty: set[Hashable] = set()  # added while being processed: queued again when that ends
        self._failing: dict[Hashable, Backoff] = {}
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._worker_tasks: list[asyncio.Task[None]] = []
        self._waiting: list[asyncio.Task[None]] = []  # beside the workers: see when_gate_opens, in_background

    def add(self, key: Hashable) -> None:
        if key in self._handling:
            self._dirty.add(key)
        elif key not in self._pending:
            self._pending.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, key)

    async def handle(self, key: Hashable) -> bool:
        """Process one key; return True to retry later."""
        raise NotImplementedError

    def start(self, gate: Gate | None = None) -> None:
        """Process keys from now on, or once ``gate`` opens; keys added meanwhile wait (de-duplicated)."""
        self._worker_tasks = [asyncio.create_task(self._process_keys(gate), name=f"controller-{self.name}-{i}")
                       for i in range(self.workers)]

    def when_gate_opens(self, gate: Gate | None, act: Callable[[], Awaitable[None]]) -> None:
        """Run ``act`` once ``gate``, closed now, opens: a process that comes to lead looks again at what it let
        the leader do meanwhile. Nothing when there is no gate or it is open already; :meth:`stop` cancels it."""
        if gate is None or gate.held:
            return

        async def wait_then_act() -> None:
            await gate.wait()
            await act()

        self._waiting.append(asyncio.get_running_loop().create_task(wait_then_act(), name=f"{self.name}-leading"))

    def in_background(self, act: Callable[[], Awaitable[None]], name: str) -> None:
        """Run ``act`` beside the workers (a start-up look that queues keys); :meth:`stop` cancels it."""
        self._waiting.append(asyncio.get_running_loop().create_task(act(), name=f"{self.name}-{name}"))

    async def stop(self) -> None:
        for waiting in self._waiting:
            waiting.cancel()
        await asyncio.gather(*self._waiting, return_exceptions=True)
        for task in self._worker_tasks:
            task.cancel()
        for task in self._worker_tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._worker_tasks = []

    async def _process_keys(self, gate: Gate | None) -> None:
        if gate is not None:
            await gate.wait()
        while True:
            key = await self._queue.get()
            self._pending.discard(key)
            self._handling.add(key)
            try:
                retry = await self.handle(key)
                self._failing.pop(key, None)
                if retry:
                    self.add_after(key, RETRY_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception:
                backoff = self._failing.setdefault(key, Backoff(*FAILURE_BACKOFF, jitter=False))
                delay = backoff.next()
                log.exception("%s: processing %s failed (again in %.1fs)", self.name, key, delay)
                self.add_after(key, delay)
            finally:
                self._handling.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self.add(key)
