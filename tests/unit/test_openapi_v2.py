"""OpenAPI v2: the v3 documents rewritten into the shape kubectl's v2 models accept, and its protobuf."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apiserver.api.openapi_handler import negotiate
from apiserver.catalog import Catalog
from apiserver.openapi.v2 import OpenAPIV2, convert_schema, openapi_v2, v2_document
from apiserver.openapi.v3 import group_version_path, openapi_document
from apiserver.resourcetypes import ResourceType
from tests import gnostic

PRIMITIVES = {"string", "number", "integer", "boolean"}


def model_errors(defs: dict[str, dict[str, Any]]) -> list[str]:
    """What kube-openapi's ``NewOpenAPIData`` (pkg/util/proto/document.go) would refuse: one such
    error and kubectl cannot validate anything against the document."""
    errors: list[str] = []

    def check(node: dict[str, Any], path: str) -> None:
        types = node.get("type", [])
        if "$ref" in node:
            if node.get("properties") or types:
                errors.append(f"{path}: a reference with a type or properties")
            if node["$ref"].removeprefix("#/definitions/") not in defs:
                errors.append(f"{path}: dangling reference {node['$ref']}")
        elif len(types) > 1:
            errors.append(f"{path}: several types {types}")
        elif types == ["array"]:
            if len(node.get("items", [])) != 1:
                errors.append(f"{path}: an array without exactly one items schema")
            for sub in node.get("items", []):
                check(sub, path + "[]")
        elif types and types != ["object"] and types[0] not in PRIMITIVES:
            errors.append(f"{path}: unknown primitive type {types}")
        for name, sub in (node.get("properties") or {}).items():
            check(sub, f"{path}.{name}")
        if isinstance(node.get("additionalProperties"), dict):
            check(node["additionalProperties"], path + "{}")

    for name, schema in defs.items():
        check(schema, name)
    return errors


def space_v2(catalog: Catalog, space: str) -> OpenAPIV2:
    defs = catalog.definitions_for(space)
    by_gv: dict[tuple[str, str], list[ResourceType]] = {}
    for t in catalog.types(space):
        by_gv.setdefault((t.group, t.version), []).append(t)
    return openapi_v2({group_version_path(g, v): openapi_document(g, v, tuple(ts), defs)
                       for (g, v), ts in by_gv.items()})


@pytest.fixture(scope="module")
def builtin() -> OpenAPIV2:
    return space_v2(Catalog(), "some-space")


def test_every_builtin_definition_is_one_kubectls_model_builder_accepts(builtin: OpenAPIV2) -> None:
    defs = gnostic.definitions(builtin.protobuf())
    assert set(defs) == set(builtin.document["definitions"])
    assert model_errors(defs) == []


def test_kinds_carry_their_gvk_and_patch_operations_their_field_validation(builtin: OpenAPIV2) -> None:
    proto = builtin.protobuf()
    defs = gnostic.definitions(proto)
    assert defs["io.k8s.api.core.v1.ConfigMap"]["extensions"]["x-kubernetes-group-version-kind"] == \
        [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    assert defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "description": defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"]["description"]}
    gvk, params = gnostic.patch_operations(proto)["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert gvk == {"group": "apps", "kind": "Deployment", "version": "v1"}
    assert "fieldValidation" in params
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == ["string"]


def test_paths_are_swagger_operations_with_body_parameters(builtin: OpenAPIV2) -> None:
    item = builtin.document["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    assert item["parameters"][0] == {"description": "name of the ConfigMap", "in": "path", "name": "name",
                                     "required": True, "type": "string"}
    patch = item["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert patch["parameters"][-1] == {
        "in": "body", "name": "body", "required": True,
        "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
    assert patch["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}
    assert patch["x-kubernetes-action"] == "patch"
    listing = builtin.document["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"]
    assert listing["produces"] == ["application/json", "application/json;stream=watch"]
    assert "requestBody" not in json.dumps(builtin.document)
    assert "#/components/" not in json.dumps(builtin.document)


def test_crd_schemas_lose_what_kubectl_cannot_validate_as_apiextensions_does() -> None:
    converted = convert_schema({
        "type": "object",
        "required": ["opt", "kept"],
        "properties": {
            "opt": {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}},
            "kept": {"type": "string", "anyOf": [{"format": "date"}]},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"a": {"type": "string"}}},
            "port": {"x-kubernetes-int-or-string": True,
                     "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "bare": {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                     "items": {"type": "string"}},
            "pod": {"type": "object", "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}}},
        },
    })
    props = converted["properties"]
    assert converted["required"] == ["kept"]
    assert props["opt"] == {}
    assert props["kept"] == {"type": "string"}
    assert props["free"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["port"] == {"x-kubernetes-int-or-string": True}
    assert props["bare"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert set(props["pod"]["properties"]) == {"spec", "apiVersion", "kind", "metadata"}
    assert props["pod"]["required"] == ["kind", "apiVersion"]


def test_a_kind_preserving_unknown_fields_at_its_root_is_a_bare_object() -> None:
    gvk = [{"group": "example.com", "kind": "Loose", "version": "v1"}]
    doc = v2_document([{"paths": {}, "components": {"schemas": {"com.example.v1.Loose": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": gvk,
        "properties": {"metadata": {"allOf": [{"$ref": "#/components/schemas/X"}]}}}}}}])
    assert doc["definitions"]["com.example.v1.Loose"] == {
        "type": "object", "x-kubernetes-group-version-kind": gvk}


def test_a_definition_in_several_group_versions_is_one_with_every_gvk() -> None:
    def v3(version: str) -> dict[str, Any]:
        return {"paths": {}, "components": {"schemas": {"DeleteOptions": {
            "type": "object", "properties": {},
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "DeleteOptions", "version": version}]}}}}

    merged = v2_document([v3("v1"), v3("v1beta1"), v3("v1")])["definitions"]["DeleteOptions"]
    assert [g["version"] for g in merged["x-kubernetes-group-version-kind"]] == ["v1", "v1beta1"]


def test_the_document_is_cached_by_the_v3_hashes_and_rebuilt_when_a_crd_changes() -> None:
    catalog = Catalog()
    first = space_v2(catalog, "a")
    assert space_v2(catalog, "b") is first
    widget = ResourceType("example.com", "v1", "Widget", "widgets", "widget", True,
                          schema_name="com.example.v1.Widget",
                          schema={"type": "object", "properties": {"spec": {
                              "type": "object", "properties": {"size": {"type": "integer"}}}}})
    catalog.set_custom_types("a", (widget,))
    changed = space_v2(catalog, "a")
    assert changed is not first and changed.etag != first.etag
    defs = gnostic.definitions(changed.protobuf())
    assert defs["com.example.v1.Widget"]["extensions"]["x-kubernetes-group-version-kind"] == \
        [{"group": "example.com", "kind": "Widget", "version": "v1"}]
    assert defs["com.example.v1.Widget"]["properties"]["spec"]["properties"]["size"]["type"] == ["integer"]
    assert model_errors(defs) == []


@pytest.mark.parametrize(("accept", "answer"), [
    (None, "application/json"),
    ("*/*", "application/json"),
    ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
     "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
    ("application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
     "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
    ("text/html, application/*;q=0.9", "application/json"),
    ("application/yaml", None),
    ("text/plain", None),
])
def test_accept_negotiation_follows_kube_openapi(accept: str | None, answer: str | None) -> None:
    assert negotiate(accept) == answer
