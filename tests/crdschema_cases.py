"""Bodies and renderings the tests of ``apiserver.crdschema`` share: a CRD around a schema, a schema around a
field, and causes rendered as ``field: body`` like Go's ``field.Error.Error()``."""

from __future__ import annotations

from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import (
    validate_crd,
    validate_object,
)

CORPUS = "/work/shared/corpus/agent-substrate/crds"


def render(causes: list[Cause]) -> list[str]:
    return [gofmt.render(c) for c in causes]


def check(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    return render(validate_object(obj, schema, ""))


def field(schema: dict[str, Any]) -> dict[str, Any]:
    """A root schema with one property, ``field``."""
    return {"type": "object", "properties": {"field": schema}}


def crd(schema: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True}
    if schema is not None:
        version["schema"] = {"openAPIV3Schema": schema}
    body: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.spacehub.io"},
        "spec": {
            "group": "example.spacehub.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version],
        },
    }
    body["spec"].update(spec)
    return body


def spec_schema(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A root schema whose ``spec`` has the given properties."""
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": properties, **extra}}}


SPEC = "spec.validation.openAPIV3Schema.properties[spec]"


def crd_errors(body: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return render(validate_crd(body, old))


