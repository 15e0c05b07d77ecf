"""In-process controllers that give spaces their Kubernetes lifecycle behaviour.

Each reacts to committed changes (via the watch bus) and acts only through the object service, so
its writes are validated, versioned and watched like any client's. Work is keyed and de-duplicated;
a failed item is retried with backoff and never stops the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Protocol

log = logging.getLogger(__name__)


class Gate(Protocol):
    """What a singleton waits for before it acts (the lease, where several hub processes share a database)."""

    @property
    def held(self) -> bool: ...

    async def wait(self) -> None: ...


class WorkQueue:
    """A de-duplicating queue of keys processed one at a time by ``handle``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending: set[Hashable] = set()
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._waiting: list[asyncio.Task[None]] = []  # see when_gate_opens

    def add(self, key: Hashable) -> None:
        if key not in self._pending:
            self._pending.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, key)

    async def handle(self, key: Hashable) -> bool:
        """Process one key; return True to retry later."""
        raise NotImplementedError

    def start(self, gate: Gate | None = None) -> None:
        """Process keys from now on, or once ``gate`` opens; keys added meanwhile wait (de-duplicated)."""
        self._task = asyncio.create_task(self._run(gate), name=f"controller-{self.name}")

    def when_gate_opens(self, gate: Gate | None, act: Callable[[], Awaitable[None]]) -> None:
        """Run ``act`` once ``gate``, closed now, opens: a process that comes to lead looks again at what it let
        the leader do meanwhile. Nothing when there is no gate or it is open already; :meth:`stop` cancels it."""
        if gate is None or gate.held:
            return

        async def wait_then_act() -> None:
            await gate.wait()
            await act()

        self._waiting.append(asyncio.get_running_loop().create_task(wait_then_act(), name=f"{self.name}-leading"))

    async def stop(self) -> None:
        for waiting in self._waiting:
            waiting.cancel()
        await asyncio.gather(*self._waiting, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, gate: Gate | None) -> None:
        if gate is not None:
            await gate.wait()
        failures: dict[Hashable, int] = {}
        while True:
            key = await self._queue.get()
            self._pending.discard(key)
            try:
                retry = await self.handle(key)
                if retry:
                    self.add_after(key, 0.2)
                failures.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception:
                n = failures.get(key, 0) + 1
                failures[key] = n
                log.exception("%s: processing %s failed (attempt %d)", self.name, key, n)
                self.add_after(key, min(30.0, 0.1 * 2**n))
