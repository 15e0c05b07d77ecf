"""Exponential backoff with jitter, so that a thousand syncers do not retry in lockstep."""

from __future__ import annotations

import random


class Backoff:
    def __init__(self, initial: float = 0.5, maximum: float = 30.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self.current = initial

    def next(self) -> float:
        """The next delay: doubles up to ``maximum``, each drawn from [50 %, 100 %] of the step."""
        delay = self.current * random.uniform(0.5, 1.0)
        self.current = min(self.maximum, self.current * 2)
        return delay

    def reset(self) -> None:
        self.current = self.initial
