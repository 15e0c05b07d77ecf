"""Exponential backoff: the one formula every retry in spacehub uses.

The delay before attempt ``n`` (1 the first retry) is ``initial`` doubled ``n - 1`` times, up to ``maximum``
(:func:`step`). :class:`Backoff` counts the attempts for a loop and, with jitter (the default), draws each delay
from [50 %, 100 %] of its step, so that a thousand syncers do not retry in lockstep. A work queue's per-key
retries and the syncer's drift corrections of one object use the steps without jitter (client-go's
``ItemExponentialFailureRateLimiter``): one key's retries are not a herd.
"""

from __future__ import annotations

import random

_MAX_DOUBLINGS = 64  # far past any maximum: keeps 2 ** n a float's size


def step(attempt: int, initial: float, maximum: float) -> float:
    """The delay before retry ``attempt`` (1, 2, …): ``initial``, twice that, … capped at ``maximum``."""
    return min(maximum, initial * 2 ** min(max(attempt - 1, 0), _MAX_DOUBLINGS))


class Backoff:
    def __init__(self, initial: float = 0.5, maximum: float = 30.0, *, jitter: bool = True) -> None:
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self.attempts = 0

    def next(self) -> float:
        """The next delay: the next step, jittered unless ``jitter`` is off."""
        self.attempts += 1
        delay = step(self.attempts, self.initial, self.maximum)
        return delay * random.uniform(0.5, 1.0) if self.jitter else delay

    def reset(self) -> None:
        self.attempts = 0
