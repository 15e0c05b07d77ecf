"""Exponential backoff: the one formula every retry in spacehub uses.

Each delay doubles from ``initial`` up to ``maximum``; with jitter (the default) each is drawn from [50 %, 100 %]
of its step, so that a thousand syncers do not retry in lockstep. A work queue's per-key retries use it
without jitter (client-go's ``ItemExponentialFailureRateLimiter``): one key's retries are not a herd.
"""

from __future__ import annotations

import random


class Backoff:
    def __init__(self, initial: float = 0.5, maximum: float = 30.0, *, jitter: bool = True) -> None:
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self.current = initial

    def next(self) -> float:
        """The next delay: the current step (jittered), then the step doubles up to ``maximum``."""
        delay = self.current * random.uniform(0.5, 1.0) if self.jitter else self.current
        self.current = min(self.maximum, self.current * 2)
        return delay

    def reset(self) -> None:
        self.current = self.initial
