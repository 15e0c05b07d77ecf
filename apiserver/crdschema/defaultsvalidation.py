"""Checks of ``default`` values in CRD schemas (``structuraldefaulting.ValidateDefaults``).

A default must be a value the schema accepts, and it must survive pruning unchanged ("must not
have unknown fields"), since it is applied after pruning. Defaults of embedded resources must also
carry valid type and object metadata. Each node's default is checked against that node's schema,
so errors are reported under ``<node>.default``, e.g.
``spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default``.

Not checked here: defaults of ``metadata`` fields of embedded resources are validated against their
own schema only (upstream also builds the surrounding object and validates its metadata), and the
CEL rules a default must satisfy (cel owns those).
"""

from __future__ import annotations

import copy

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import objectmeta
from apiserver.crdschema.node import build
from apiserver.crdschema.pruning import prune_value
from apiserver.crdschema.schemavalidation import go_equal, validate_value
from apiserver.crdschema.structural import Schema, child, items_schema, prop_path, props, strue

_META_FIELDS = frozenset({"metadata", "apiVersion", "kind"})


def _walk(path: str, s: Schema, inside_meta: bool, embedded: bool, require_pruned: bool, out: list[Cause]) -> None:
    if embedded:
        inside_meta = False
    default = s.get("default")
    if default is not None:
        node = build(s)
        where = child(path, "default")
        if inside_meta:
            out.extend(validate_value(node, default, where))
        else:
            if require_pruned:
                pruned = copy.deepcopy(default)
                prune_value(pruned, node, embedded)
                if not go_equal(pruned, default):
                    out.append(gofmt.invalid(where, default, "must not have unknown fields"))
            err = objectmeta.coerce_error(where, default, node, embedded)
            if err is not None:
                out.append(err)
            elif meta_errs := objectmeta.validate_embedded(where, default, node, embedded):
                out.extend(meta_errs)
            else:
                out.extend(validate_value(node, default, where))
    items = items_schema(s)
    if items is not None:
        _walk(child(path, "items"), items, inside_meta, strue(items, "x-kubernetes-embedded-resource"), require_pruned,
              out)
    for k, sub in props(s).items():
        sub_inside = inside_meta or (embedded and k in _META_FIELDS)
        _walk(prop_path(path, k), sub, sub_inside, strue(sub, "x-kubernetes-embedded-resource"), require_pruned, out)
    # Upstream does not follow additionalProperties here, so defaults below map values go unchecked.


def validate_defaults(path: str, schema: Schema, require_pruned: bool) -> list[Cause]:
    """All default problems of a CRD version schema; the root is a resource (embedded) itself."""
    out: list[Cause] = []
    _walk(path, schema, False, True, require_pruned, out)
    return out
