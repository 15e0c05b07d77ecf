"""Per-target change logs and the one global counter their seqs come from.

Owns the retention rule, the answer to "what changed after seq N" and first contact. Never decides
what a change is (:mod:`placement.desired` does) and never does I/O.

A target's log starts at its first contact (the engine's first ``desired``/``current_seq``/
``changes_since`` call for it), which draws a fresh number from the global counter as the log's
floor. So the initial load of a hub restart floods no log nobody reads. Seqs come from one global
counter, so they increase per target, and one change of a cover can be one Change object shared by
the logs of all its targets. ``first_seq`` lets the glue start the counter above every seq an earlier
hub process handed out, so an old seq can never be mistaken for a current one.

``floor`` is the highest seq the log cannot account for: the seq current when the log started (first
contact) or the seq of the newest change pushed out of the ring. ``since(seq)`` is complete exactly
when ``floor <= seq <= last``; otherwise the caller must resynchronise from the full desired set.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Literal

from placement.model import Change, DesiredEntry


class ChangeLog:
    def __init__(self, floor: int, size: int, target: str = "") -> None:
        self.target = target
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


class ChangeLogs:
    """The change log of every target that had first contact, and the global seq counter."""

    def __init__(self, size: int, first_seq: int) -> None:
        self.seq = first_seq
        self.logs: dict[str, ChangeLog] = {}
        self._size = size
        # (target, entry) of every DELETE logged since the last look, while someone looks (placement.moves).
        self.deleted: list[tuple[str, DesiredEntry]] | None = None

    def start(self, target: str) -> ChangeLog:
        # A fresh floor above every seq handed out so far: seq 0 (never synced) always means "resync".
        self.seq += 1
        log = self.logs[target] = ChangeLog(self.seq, self._size, target)
        return log

    def extend(self, log: ChangeLog, op: Literal["upsert", "delete"], entries: Iterable[DesiredEntry]) -> None:
        """One change per entry, in the given order, to one target's log."""
        for entry in entries:
            self.seq += 1
            log.append(Change(self.seq, op, entry))
            if op == "delete" and self.deleted is not None:
                self.deleted.append((log.target, entry))

    def broadcast(self, targets: Iterable[str], op: Literal["upsert", "delete"], entry: DesiredEntry) -> None:
        """One change, shared by the logs of all these targets."""
        self.seq += 1
        change = Change(self.seq, op, entry)
        for name in targets:
            self.logs[name].append(change)
            if op == "delete" and self.deleted is not None:
                self.deleted.append((name, entry))
