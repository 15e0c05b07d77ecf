"""Structural defaulting of custom resources (``default`` values of a CRD schema).

Upstream applies defaults after pruning and before validation, walking the object and the
schema together: a property with a ``default`` is set when it is absent (or ``null`` and the
property is not nullable), in every object that exists; list items and map values that are
``null`` take their schema's default. Defaults are never applied inside a missing parent object,
so defaulting ``spec.replicas`` needs ``spec`` to exist (or ``spec`` to have a default of its own,
which is applied first and then defaulted further). Default values are deep-copied.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from apiserver.crdschema.node import Node, root_node


def _non_nullable_null(x: Any, s: Node | None) -> bool:
    return x is None and s is not None and not s.nullable


def default_value(x: Any, s: Node | None) -> None:
    """Apply ``s``'s defaults inside ``x`` (in place)."""
    if s is None:
        return
    if isinstance(x, dict):
        for k, prop in s.props.items():
            if not prop.has_default:
                continue
            if k not in x or _non_nullable_null(x[k], prop):
                x[k] = copy.deepcopy(prop.default)
        for k in x:
            prop = s.props.get(k)
            if prop is not None:
                default_value(x[k], prop)
            elif s.has_additional:
                add = s.additional
                if _non_nullable_null(x[k], add) and add is not None:
                    x[k] = copy.deepcopy(add.default)
                default_value(x[k], add)
    elif isinstance(x, list):
        items = s.items
        for i in range(len(x)):
            if _non_nullable_null(x[i], items) and items is not None:
                x[i] = copy.deepcopy(items.default)
            default_value(x[i], items)


def default_object(obj: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Apply the schema's defaults to a custom resource in place."""
    default_value(obj, root_node(schema))
