"""Per-space records that most spaces hold alike, kept once.

Every space holds the same few system objects (its ``default``, ``kube-system``, ``kube-public`` and
``kube-node-lease`` namespaces, all Active): an index with a table per space would hold 10,000 copies of one
table. Here spaces whose tables are alike share one, found by content; a shared table never changes, a change
gives the space a copy of its own, and a copy that becomes alike another space's is shared again. A table of more
than ``shared_max`` entries stays its space's own and is changed in place (copying thousands of entries at
every write would cost more than the sharing saves).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)
SHARED_MAX = 64


class Shareable(Protocol):
    """A record that can be shared (then it must never change: a change goes to a copy)."""

    shared: bool


S = TypeVar("S", bound=Shareable)


class ContentPool(Generic[S]):
    """The rule both kinds of per-space records follow (these tables, the RBAC policy index's records): records alike
    by content are one object, held weakly (the last space using one lets it go), and a record of more than
    ``shared_max`` entries stays its space's own."""

    def __init__(self, shared_max: int = SHARED_MAX) -> None:
        self.shared_max = shared_max
        self._by_content: weakref.WeakValueDictionary[Hashable, S] = weakref.WeakValueDictionary()

    def share(self, record: S, size: int, content: Callable[[], Hashable]) -> S:
        """The shared record alike ``record`` (``record`` itself, marked shared, if it is the first)."""
        if record.shared or size > self.shared_max:
            return record
        key = content()
        found = self._by_content.get(key)
        if found is not None:
            return found
        record.shared = True
        self._by_content[key] = record
        return record


class _Table(dict[K, V]):
    """A dict that can be weakly referenced (the index of shared tables holds them so) and knows whether it is
    shared (then it must not change)."""

    __slots__ = ("__weakref__", "shared")

    def __init__(self, entries: Mapping[K, V] | None = None) -> None:
        super().__init__(entries or {})
        self.shared = False


class SharedTables(Generic[K, V]):
    """A table of ``K`` → ``V`` per space; tables alike are one object."""

    def __init__(self, shared_max: int = SHARED_MAX) -> None:
        self._tables: dict[str, _Table[K, V]] = {}
        self._pool: ContentPool[_Table[K, V]] = ContentPool(shared_max)

    def get(self, space: str, key: K) -> V | None:
        table = self._tables.get(space)
        return None if table is None else table.get(key)

    def set(self, space: str, key: K, value: V) -> None:
        table = self._own(space)
        table[key] = value
        self._tables[space] = self._shared(table)

    def pop(self, space: str, key: K) -> None:
        found = self._tables.get(space)
        if found is None or key not in found:
            return
        table = self._own(space)
        del table[key]
        if table:
            self._tables[space] = self._shared(table)
        else:
            del self._tables[space]

    def items(self) -> Iterator[tuple[str, K, V]]:
        """Every (space, key, value), from a snapshot of the spaces (callers may change tables meanwhile)."""
        for space, table in list(self._tables.items()):
            for key, value in list(table.items()):
                yield space, key, value

    def _own(self, space: str) -> _Table[K, V]:
        """The space's table, copied first if it is shared."""
        table = self._tables.get(space)
        if table is None:
            return _Table()
        return _Table(table) if table.shared else table

    def _shared(self, table: _Table[K, V]) -> _Table[K, V]:
        return self._pool.share(table, len(table), lambda: frozenset(table.items()))
