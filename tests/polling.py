"""Polling with a deadline, for tests: only "not yet" is retried, anything else fails at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05,
             message: str = "condition", retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``message`` at the deadline.

    Only "not yet" is retried: a falsy result, or an exception of a type the caller names in ``retry_on``
    (connection refused while a process starts, say). Any other exception is a bug in the test or the
    product and propagates at once with its traceback instead of becoming a timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except retry_on as exc:
            last_error = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}; last error: {last_error!r}")


async def eventually(probe: Callable[[], Awaitable[T] | T], timeout: float = 20.0, message: str = "condition") -> T:
    """Poll ``probe`` (sync or async) until it returns something truthy, yielding to the event loop's other tasks
    looks; its exceptions propagate."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
