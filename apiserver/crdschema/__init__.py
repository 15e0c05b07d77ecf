"""CustomResourceDefinitions and custom-resource schemas, with the apiserver's semantics.

What ``apiextensions-apiserver`` does with a CRD and the objects it defines:

* :func:`validate_crd` — ``apiextensions.k8s.io/v1`` CRD validation on create and update:
  names, versions, structural schemas, defaults, list/map types, subresources, printer columns,
  stored versions (see :mod:`apiserver.crdschema.crd` for where errors are reported), and
  :func:`crd_warnings` for the warnings of the same write;
* :func:`prune` — drop fields the schema does not specify, returning their paths for
  ``fieldValidation`` (``unknown field "spec.foo"``);
* :func:`default_object` — apply schema ``default`` values (after pruning, before validation);
* :func:`validate_object` — OpenAPI validation of a custom resource with kube-openapi's messages,
  embedded resources and set/map list uniqueness (CEL rules are cel's).

Field errors are :class:`apimachinery.errors.Cause` objects whose message is apimachinery's
``field.Error.ErrorBody()`` and whose field is the upstream path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.crdschema.crd import crd_warnings, default_crd, schema_field_path, schema_for_version, validate_crd
from apiserver.crdschema.defaulting import default_object
from apiserver.crdschema.pruning import prune
from apiserver.crdschema.resource import validate_object, validate_scale, validate_status

__all__ = [
    "crd_warnings",
    "default_crd",
    "default_object",
    "list_type_info",
    "prune",
    "schema_field_path",
    "schema_for_version",
    "validate_crd",
    "validate_object",
    "validate_scale",
    "validate_status",
]


def list_type_info(schema: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """An array schema's list type (``atomic`` when unset, ``set`` or ``map``) and its map keys."""
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys")
    return (list_type if isinstance(list_type, str) else "atomic",
            tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ())
