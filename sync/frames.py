"""UPSERT and DELETE lines encoded once per change and content, shared by every stream that sends them.

One change of a cover is one :class:`~placement.model.Change` (one seq) in the logs of all its targets, and
every target without a copy of its own (no customization, no replica share) gets the very same projected
object. So the line a stream would encode for it is byte for byte the line the other streams encode: the
first stream encodes it, the others reuse it. A line is reused only for the identical object (``is``), so a
per-cluster copy is never sent to another cluster. Bounded: the oldest lines go first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placement.model import DesiredEntry

MAX_LINES = 4096

Key = tuple[int, DesiredEntry, str | None]


_DELETE: dict[str, Any] = {}  # the "object" of every DELETE line: it is the same for every target


class SharedLines:
    def __init__(self, capacity: int = MAX_LINES) -> None:
        self.capacity = capacity
        self._lines: dict[Key, tuple[dict[str, Any], bytes]] = {}

    def line(self, seq: int, entry: DesiredEntry, obj: dict[str, Any], revision: str | None,
             encode: Callable[[], bytes]) -> bytes:
        """The line of (seq, entry, revision) for ``obj``: encoded by ``encode`` unless already encoded for
        this very object."""
        key = (seq, entry, revision)
        cached = self._lines.get(key)
        if cached is not None and cached[0] is obj:
            return cached[1]
        line = encode()
        if len(self._lines) >= self.capacity:
            del self._lines[next(iter(self._lines))]
        self._lines[key] = (obj, line)
        return line

    def deletion(self, seq: int, entry: DesiredEntry, encode: Callable[[], bytes]) -> bytes:
        """The DELETE line of (seq, entry): the same for every target, so encoded once."""
        return self.line(seq, entry, _DELETE, None, encode)

    def __len__(self) -> int:
        return len(self._lines)
