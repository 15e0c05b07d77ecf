"""What was worked out from a body and its kind's schema, kept for the next body that gives the same key.

A create's managedFields (by the object's shape) and a clean body's field validation (by its JSON) are kept
this way: a new space's 23 default objects are alike in every space. The key names the schema and the
definitions by identity, and an entry holds both, so that an id freed and reused by another schema can never
answer for it. Bounded; the oldest entry goes first.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

V = TypeVar("V")
MISSING: Any = object()  # ``get``'s answer when nothing is kept (a kept value may be None)


class SchemaMemo(Generic[V]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[tuple[Hashable, int, int], tuple[Mapping[str, Any] | None, Mapping[str, Any], V]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Hashable, schema: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> V:
        """The value kept for ``key`` under this schema, or :data:`MISSING` (raises TypeError for a key that
        cannot be hashed)."""
        hit = self._kept.get((key, id(schema), id(defs)))
        if hit is None or hit[0] is not schema or hit[1] is not defs:
            return MISSING
        return hit[2]

    def put(self, key: Hashable, schema: Mapping[str, Any] | None, defs: Mapping[str, Any], value: V) -> V:
        if len(self._kept) >= self.limit:
            del self._kept[next(iter(self._kept))]  # the oldest
        self._kept[(key, id(schema), id(defs))] = (schema, defs, value)
        return value
