"""The newest rows updates start from (apiserver/store/recent.py): never older than what is known, bounded."""

from __future__ import annotations

from dataclasses import dataclass

from apiserver.store.logstore import Key, LogRow
from apiserver.store.recent import RecentRows

CM = Key("team-a", "configmaps", "app", "settings")


def row(revision: int, key: Key = CM, *, deleted: bool = False) -> LogRow:
    return LogRow(revision, key, revision == 1, deleted, revision - 1, b"{}")


@dataclass
class Committed:
    row: LogRow


def test_a_row_read_before_a_commit_does_not_replace_it() -> None:
    recent = RecentRows()
    recent.on_commit([Committed(row(7))])
    recent.offer(row(5))  # a store read that started before revision 7 was committed
    assert recent.get(CM) == row(7)


def test_a_deletion_is_remembered_so_an_older_read_cannot_bring_the_object_back() -> None:
    recent = RecentRows()
    recent.offer(row(5))
    recent.on_commit([Committed(row(9, deleted=True))])
    assert recent.get(CM) is None
    recent.offer(row(5))
    assert recent.get(CM) is None
    recent.on_commit([Committed(row(12))])  # created again
    assert recent.get(CM) == row(12)


def test_the_least_recently_used_keys_are_forgotten() -> None:
    recent = RecentRows(capacity=2)
    first, second, third = (Key("s", "configmaps", "app", name) for name in ("a", "b", "c"))
    recent.offer(row(1, first))
    recent.offer(row(2, second))
    assert recent.get(first) is not None  # first is now the most recently used
    recent.offer(row(3, third))
    assert recent.get(second) is None and recent.get(first) is not None and recent.get(third) is not None
    assert len(recent) == 2


def test_values_are_bounded_in_bytes_and_a_very_large_row_is_not_kept() -> None:
    recent = RecentRows(budget=10, largest_row=8)
    big = Key("s", "placementstatuses", "app", "big")
    recent.offer(LogRow(1, big, True, False, 0, b"x" * 6))
    assert recent.get(big) is not None
    recent.offer(LogRow(2, big, False, False, 1, b"x" * 9))  # grew past the largest row: forgotten, not stale
    assert recent.get(big) is None
    first, second = Key("s", "configmaps", "app", "a"), Key("s", "configmaps", "app", "b")
    recent.offer(LogRow(3, first, True, False, 0, b"x" * 6))
    recent.offer(LogRow(4, second, True, False, 0, b"x" * 6))  # 12 bytes > 10: the older one goes
    assert recent.get(first) is None and recent.get(second) is not None
