"""What the schema says about merging a field: the strategic-merge-patch metadata lookup.

Upstream keeps this in Go struct tags (``patchStrategy``, ``patchMergeKey``); the OpenAPI
definitions carry the same facts as ``x-kubernetes-patch-strategy`` (possibly a comma list such as
``merge,retainKeys``) and ``x-kubernetes-patch-merge-key`` on the *property* node, next to the
``$ref`` of its type. :class:`SchemaNode` walks those definitions: object fields under
``properties``, map values under ``additionalProperties``, list elements under ``items``. A position
the schema does not describe (unknown field, ``x-kubernetes-preserve-unknown-fields``) is an
*unknown* node, where strategic merge degrades to JSON merge semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiserver.definitions import Definitions, resolve

MERGE = "merge"
REPLACE = "replace"
RETAIN_KEYS = "retainKeys"


@dataclass(frozen=True)
class PatchMeta:
    """The patch strategies and merge key declared for one field."""

    strategies: tuple[str, ...] = ()
    merge_key: str = ""

    @classmethod
    def of(cls, *nodes: dict[str, Any]) -> PatchMeta:
        # The tags sit on the property node; fall back to the referenced type for hand-written schemas.
        for node in nodes:
            raw = node.get("x-kubernetes-patch-strategy")
            if raw:
                strategies = tuple(s.strip() for s in str(raw).split(",") if s.strip())
                return cls(strategies, str(node.get("x-kubernetes-patch-merge-key") or ""))
        return cls()

    @property
    def strategy(self) -> str:
        """The strategy other than ``retainKeys`` (``merge``, ``replace`` or empty)."""
        return next((s for s in self.strategies if s != RETAIN_KEYS), "")


NO_META = PatchMeta()


class SchemaNode:
    """A position in an object's schema; ``node`` is None where the schema says nothing."""

    __slots__ = ("defs", "node")

    def __init__(self, node: Any, defs: Definitions) -> None:
        self.defs = defs
        self.node = _resolved(defs, node)

    @property
    def known(self) -> bool:
        return self.node is not None

    def field(self, key: str) -> tuple[SchemaNode, PatchMeta]:
        """The schema of the value under ``key`` of this object or map, and its patch metadata."""
        raw = self._field_node(key)
        if raw is None:
            return SchemaNode(None, self.defs), NO_META
        child = SchemaNode(raw, self.defs)
        return child, PatchMeta.of(raw, child.node or {})

    def items(self) -> SchemaNode:
        """The schema of the elements of this list."""
        return SchemaNode(self.node.get("items") if self.node else None, self.defs)

    def declares(self, key: str) -> bool:
        """Whether ``key`` may legitimately appear here (always, where the schema is open or unknown)."""
        if self.node is None or self._open():
            return True
        return key in (self.node.get("properties") or {})

    def _field_node(self, key: str) -> dict[str, Any] | None:
        if self.node is None:
            return None
        properties = self.node.get("properties") or {}
        if key in properties:
            return properties[key]
        extra = self.node.get("additionalProperties")
        return extra if isinstance(extra, dict) else None

    def _open(self) -> bool:
        node = self.node or {}
        if "properties" not in node or node.get("x-kubernetes-preserve-unknown-fields"):
            return True
        return bool(node.get("additionalProperties"))


def _resolved(defs: Definitions, node: Any) -> dict[str, Any] | None:
    if not isinstance(node, dict):
        return None
    try:
        return resolve(defs, node)
    except KeyError:
        # A dangling $ref is a schema gap, not a client error: merge there like JSON merge patch.
        return None
