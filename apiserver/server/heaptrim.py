"""Hand the C heap's free pages back to the system now and then (glibc only).

Why: glibc returns freed memory to the system only from the top of a heap, or as whole mmapped blocks. The
allocations under 128 KiB that Python's objects above 512 bytes get (stored rows, request bodies, the decoded
objects' large dicts) come from the heap, and after a burst of writes the free chunks between those still in use
stay resident. ``malloc_trim(0)`` also releases the whole pages inside free chunks. Measured with 10,000 empty
spaces (see docs/benchmarks.md, "Spaces at scale: what limits it"): 10 to 13 MiB less RSS, each call 0.3 to 0.4 ms
on a thread. Limiting glibc's arenas (``mallopt(M_ARENA_MAX, 2)``) was measured too and changed nothing, so they
are left as glibc sizes them. Elsewhere (musl, macOS) there is no ``malloc_trim`` and nothing is started.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable

TRIM_EVERY = 10.0  # seconds: a call costs under a millisecond; what a burst left free goes back soon after it


def heap_trim() -> Callable[[], int] | None:
    """glibc's ``malloc_trim(0)`` (1 when memory was released), or None where the C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols, the C library's among them
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: int(trim(0))  # ctypes releases the GIL for the call


def start_heap_trimmer(every: float = TRIM_EVERY) -> threading.Thread | None:
    """A daemon thread trimming the heap every ``every`` seconds for the process's life; None without glibc."""
    trim = heap_trim()
    if trim is None:
        return None

    def run() -> None:
        while True:
            time.sleep(every)  # a period, not synchronisation: nothing waits on the trims
            trim()

    thread = threading.Thread(target=run, name="spacehub-heap-trim", daemon=True)
    thread.start()
    return thread
