"""Pruning of custom resources: what the apiserver silently drops when it decodes a request.

Upstream's decoder for custom resources (``unstructuredSchemaCoercer``) runs, in order:

1. structural pruning (``pruning.PruneWithOptions``): fields not specified by the schema are
   removed and their paths recorded for ``fieldValidation`` (``Strict`` fails on them, ``Warn``
   warns). The root and every ``x-kubernetes-embedded-resource`` keep ``apiVersion``, ``kind`` and
   ``metadata``; ``x-kubernetes-preserve-unknown-fields`` keeps unknown fields (but still prunes
   inside the known ones);
2. ``PruneNonNullableNullsWithoutDefaults``: a JSON ``null`` where the schema is neither nullable
   nor defaulted is removed (a defaulted one is replaced by defaulting later);
3. embedded ``metadata`` is round-tripped through ObjectMeta, dropping (and reporting) unknown
   top-level keys.

Paths are reported the way upstream records them and kube's strict decoder prints them:
``spec.foo``, ``spec.items[0].bar`` (no leading dot), sorted per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.crdschema.node import Node, root_node

_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
# Fields of metav1.ObjectMeta; anything else in an embedded resource's metadata is dropped.
_OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


class _Pruner:
    __slots__ = ("unknown",)

    def __init__(self) -> None:
        self.unknown: list[str] = []

    def prune(self, x: Any, s: Node | None, path: str, embedded: bool) -> None:
        if s is not None and s.preserve_unknown:
            self.skip(x, s, path, embedded)
            return
        if isinstance(x, dict):
            if s is None:
                for k in list(x):
                    self.unknown.append(_join(path, k))
                    del x[k]
                return
            for k in list(x):
                if embedded and k in _META_FIELDS:
                    continue
                sub = s.props.get(k)
                if sub is not None:
                    self.prune(x[k], sub, _join(path, k), sub.embedded)
                elif s.has_additional:
                    add = s.additional
                    self.prune(x[k], add, _join(path, k), add is not None and add.embedded)
                else:
                    # Upstream does not record unknown meta fields at the root (there are none: the
                    # root keeps them), but does record a stray "metadata" deeper down.
                    if k not in _META_FIELDS or path:
                        self.unknown.append(_join(path, k))
                    del x[k]
        elif isinstance(x, list):
            items = s.items if s is not None else None
            for i, v in enumerate(x):
                self.prune(v, items, f"{path}[{i}]", items is not None and items.embedded)

    def skip(self, x: Any, s: Node, path: str, embedded: bool) -> None:
        """Inside x-kubernetes-preserve-unknown-fields: unknown fields stay, known ones are pruned."""
        if isinstance(x, dict):
            for k in list(x):
                if embedded and k in _META_FIELDS:
                    continue
                sub = s.props.get(k)
                if sub is not None:
                    self.prune(x[k], sub, _join(path, k), sub.embedded)
                elif s.has_additional:
                    add = s.additional
                    self.prune(x[k], add, _join(path, k), add is not None and add.embedded)
        elif isinstance(x, list) and s.items is not None:
            for i, v in enumerate(x):
                self.skip(v, s.items, f"{path}[{i}]", s.items.embedded)


def _schema_for(key: str, s: Node | None) -> Node | None:
    if s is None:
        return None
    sub = s.props.get(key)
    if sub is not None:
        return sub
    return s.additional if s.has_additional else None


def prune_nulls(x: Any, s: Node | None) -> None:
    """PruneNonNullableNullsWithoutDefaults."""
    if isinstance(x, dict):
        for k in list(x):
            sub = _schema_for(k, s)
            v = x[k]
            if v is None and sub is not None and not sub.nullable and not sub.has_default:
                del x[k]
            else:
                prune_nulls(v, sub)
    elif isinstance(x, list):
        items = s.items if s is not None else None
        for v in x:
            prune_nulls(v, items)


def _coerce_embedded_metadata(x: Any, s: Node | None, path: str, unknown: list[str], root: bool) -> None:
    """Drop unknown ObjectMeta keys of embedded resources (the root's metadata is the caller's)."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.embedded and not root:
            meta = x.get("metadata")
            if isinstance(meta, dict):
                for k in list(meta):
                    if k not in _OBJECT_META_FIELDS:
                        unknown.append(f"{_join(path, 'metadata')}.{k}")
                        del meta[k]
        for k, v in x.items():
            sub = s.props.get(k)
            if sub is not None:
                _coerce_embedded_metadata(v, sub, _join(path, k), unknown, False)
            elif s.has_additional:
                # Coercion builds field.Paths, where map keys print as [key].
                _coerce_embedded_metadata(v, s.additional, f"{path}[{k}]", unknown, False)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _coerce_embedded_metadata(v, s.items, f"{path}[{i}]", unknown, False)


def prune(obj: dict[str, Any], schema: Mapping[str, Any] | None) -> list[str]:
    """Remove what the schema does not specify; returns the removed fields' paths, sorted."""
    root = root_node(schema)
    pruner = _Pruner()
    # The object itself is a resource: it keeps apiVersion, kind and metadata whatever the schema says.
    pruner.prune(obj, root, "", True)
    prune_nulls(obj, root)
    coerced: list[str] = []
    _coerce_embedded_metadata(obj, root, "", coerced, True)
    # Each step sorts its own paths (Go's sort.Strings: byte order, which str order matches).
    return sorted(pruner.unknown) + sorted(coerced)


def prune_value(value: Any, node: Node, embedded: bool) -> None:
    """Structural pruning of a value against a node (used to check that defaults are pruned)."""
    _Pruner().prune(value, node, "", embedded)
