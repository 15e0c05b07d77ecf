"""One read, at start, of every space's objects that some component indexes by a marker in their stored JSON.

The garbage collector indexes the objects holding ``"ownerReferences"``, the status controller those holding its
``kubestellar.io/executing-count`` annotation. Each of them alone is a query over the newest row of every key of
the log — the database finds the newest rows, then looks for the bytes in each — and at start with thousands of
spaces that pass costs more than what it finds. Components say which markers they want before the runtime
starts; the runtime reads the rows holding any of them in one query, and each component takes its own.
"""

from __future__ import annotations

from apiserver.store.logstore import LogRow, LogStore


class MarkedRows:
    """The live objects of every space (the hub's internal records excepted) whose stored JSON holds a marker
    some component asked for, read once (blocking) and handed to each component once."""

    def __init__(self) -> None:
        self._found: dict[bytes, list[LogRow]] = {}  # marker → rows holding it
        self._read = False

    def want(self, marker: bytes) -> None:
        """Ask for the rows holding ``marker``: before :meth:`read`."""
        assert not self._read, f"{marker!r} asked for after the start-up read"
        self._found.setdefault(marker, [])

    def read(self, store: LogStore) -> None:
        """The one query, for every marker asked for (blocking; at start, before the bus delivers commits)."""
        markers = list(self._found)
        if markers:
            for row in store.list_spaces_rows(containing=markers):
                for marker in markers:
                    if marker in row.value:
                        self._found[marker].append(row)
        self._read = True

    def take(self, marker: bytes) -> list[LogRow]:
        """The rows holding ``marker`` as of the read; once, so that none stay held after start-up."""
        assert self._read, f"{marker!r} taken before the start-up read"
        return self._found.pop(marker)
