"""Per-target change logs: a bounded ring of the changes of one target's desired set.

Owns the retention rule and the answer to "what changed after seq N". Never decides what a change
is (the engine does) and never does I/O.

``floor`` is the highest seq the log cannot account for: the seq current when the log started (first
contact) or the seq of the newest change pushed out of the ring. ``since(seq)`` is complete exactly
when ``floor <= seq <= last``; otherwise the caller must resynchronise from the full desired set.
"""

from __future__ import annotations

from collections import deque

from placement.model import Change


class ChangeLog:
    def __init__(self, floor: int, size: int) -> None:
        self.floor = floor
        self._ring: deque[Change] = deque()
        self._size = max(1, size)

    @property
    def last(self) -> int:
        return self._ring[-1].seq if self._ring else self.floor

    def append(self, change: Change) -> None:
        if len(self._ring) >= self._size:
            self.floor = self._ring.popleft().seq
        self._ring.append(change)

    def since(self, seq: int) -> list[Change] | None:
        if seq < self.floor or seq > self.last:
            return None
        out: list[Change] = []
        # Newest first until seq is reached, so a caller that is nearly up to date costs little.
        for change in reversed(self._ring):
            if change.seq <= seq:
                break
            out.append(change)
        out.reverse()
        return out

    def __len__(self) -> int:
        return len(self._ring)
