"""Garbage collection for a server whose heap is large and long-lived (thousands of clusters).

CPython's cyclic collector walks every tracked object on a full (generation 2) collection. A hub with
10,000 clusters holds millions of them (inventory, placement engine, stores' caches, connections), so a
full collection paused the event loop for up to 2 s (measured by ``bench/fanout_bench.py``: it was the
p99), while finding almost nothing to free: that state lives as long as the process.

So: after each full collection, what survived it is moved to the permanent generation (``gc.freeze``),
where later collections do not walk it; they look only at objects made since. Reference counting still
frees frozen objects when their last reference goes (the hub's long-lived state is plain dicts, lists and
dataclasses without reference cycles); only a reference cycle among frozen objects would outlive its
use, so once every :data:`SWEEP_EVERY` seconds the frozen objects are handed back and the next full
collection walks everything (one long pause an hour bounds what such cycles can hold). The young-generation
threshold is raised too, so the collector runs less often under allocation bursts (decoding a thousand
reports). Pauses over :data:`SLOW_PAUSE` are logged.

While a server loads its state at start-up (:func:`loading`), the collector does not run at all: every
collection would walk the growing heap of objects that all stay, and a hub's restart with thousands of spaces
spent seconds in them. What the load built is frozen at its end, as a full collection's survivors are.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

THRESHOLDS = (50_000, 20, 10)
SLOW_PAUSE = 0.25  # seconds
SWEEP_EVERY = 3600.0  # seconds between full collections over the frozen objects too


class CollectorPolicy:
    def __init__(self, sweep_every: float = SWEEP_EVERY) -> None:
        self._started = 0.0
        self.sweep_every = sweep_every
        self._last_sweep = time.monotonic()
        self.frozen_after_full = 0  # full collections after which the survivors were frozen
        self.sweeps = 0  # times the frozen objects were handed back for a full collection

    def install(self) -> None:
        gc.set_threshold(*THRESHOLDS)
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        paused = time.perf_counter() - self._started
        if paused > SLOW_PAUSE:
            log.warning("garbage collection of generation %d paused the process %.0f ms (%d objects freed)",
                        info["generation"], paused * 1000, info["collected"])
        if info["generation"] != 2:
            return
        if time.monotonic() - self._last_sweep >= self.sweep_every:
            gc.unfreeze()  # the next full collection walks everything
            self._last_sweep = time.monotonic()
            self.sweeps += 1
            return
        gc.freeze()
        self.frozen_after_full += 1


def tune_for_long_lived_heap() -> CollectorPolicy:
    """Install the policy for this process (a server's start-up; idempotent per policy object)."""
    policy = CollectorPolicy()
    policy.install()
    return policy


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """No collections while a server loads its state; what it loaded frozen afterwards when the process runs a
    :class:`CollectorPolicy`, whose sweeps hand frozen objects back (reference cycles made meanwhile, if any,
    wait for the next one). Without it (a test's in-process hub) nothing is frozen: nothing would sweep."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if any(isinstance(getattr(callback, "__self__", None), CollectorPolicy) for callback in gc.callbacks):
            gc.freeze()
        if was_enabled:
            gc.enable()
