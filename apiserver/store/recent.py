"""The newest row of recently written keys, kept from the commits this process follows.

Why: an update reads the object, computes, and writes with the read revision as precondition. Reading
costs a SELECT on a worker thread (a thread hop, and the GIL shared with the event loop) for every write:
a syncer's apply, a heartbeat, a summary. kube-apiserver's ``GuaranteedUpdate`` starts from its watch
cache's copy instead and only goes to etcd when that copy turns out stale; so do we
(:meth:`apiserver.service.Objects.guaranteed_update`).

A row here may be stale — a commit by another hub process the log feed has not delivered yet — which is
safe only because the write's precondition is checked against the database: a stale start fails the
precondition, and the retry reads the store. Rows arrive from the commits this process publishes (every
process follows every commit) and from store reads; a row never replaces a newer one, and deletions are
kept as tombstones so that a read racing a delete cannot bring the old row back. Bounded in keys and in
bytes: the least recently used keys are forgotten, and a row larger than :data:`LARGEST_ROW` (a summary of
thousands of clusters) is not kept — its key is forgotten, so its updates read the store.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from apiserver.store.logstore import Key, LogRow

CAPACITY = 16_384  # keys
BUDGET = 64 * 1024 * 1024  # bytes of values kept
LARGEST_ROW = 1024 * 1024  # bytes


class HasRow(Protocol):
    row: LogRow


class RecentRows:
    def __init__(self, capacity: int = CAPACITY, budget: int = BUDGET, largest_row: int = LARGEST_ROW) -> None:
        self.capacity = capacity
        self.budget = budget
        self.largest_row = largest_row
        self._rows: OrderedDict[Key, LogRow] = OrderedDict()
        self._bytes = 0

    def get(self, key: Key) -> LogRow | None:
        """The newest row known for ``key`` when it exists (not a tombstone); None: ask the store."""
        row = self._rows.get(key)
        if row is None or row.deleted:
            return None
        self._rows.move_to_end(key)
        return row

    def offer(self, row: LogRow) -> None:
        """A row read from the store or committed: kept unless a newer one for its key is known."""
        known = self._rows.get(row.key)
        if known is not None and known.revision >= row.revision:
            return
        if known is not None:
            self._bytes -= len(known.value)
        if len(row.value) > self.largest_row:
            if known is not None:  # a stale copy must not stay behind
                del self._rows[row.key]
            return
        self._rows[row.key] = row
        self._rows.move_to_end(row.key)
        self._bytes += len(row.value)
        while len(self._rows) > self.capacity or self._bytes > self.budget:
            _, evicted = self._rows.popitem(last=False)
            self._bytes -= len(evicted.value)

    def on_commit(self, entries: Sequence[HasRow]) -> None:
        for entry in entries:
            self.offer(entry.row)

    def __len__(self) -> int:
        return len(self._rows)
