"""apiserver.crdschema: validation of CustomResourceDefinitions themselves (names, versions, structural schemas,
defaults, subresources, conversion, updates), the helpers reading them, and the Agent Substrate CRDs.

Expected messages are apiextensions-apiserver's wording, rendered as ``field: body`` like ``field.Error.Error()``.
"""

from __future__ import annotations

import copy
import glob
import os
from typing import Any

import pytest
import yaml

from apiserver.crdschema import (
    crd_warnings,
    default_crd,
    default_object,
    list_type_info,
    prune,
    schema_field_path,
    schema_for_version,
    validate_crd,
    validate_object,
)
from tests.crdschema_cases import CORPUS, SPEC, crd, crd_errors, render, spec_schema

# --- CRD validation ------------------------------------------------------------------------------

GOOD = spec_schema({
    "replicas": {"type": "integer", "minimum": 0, "default": 1},
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "required": ["name"], "properties": {
                  "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}},
    "size": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
             "pattern": "^[0-9]+[KMG]?$"},
    "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                 "x-kubernetes-preserve-unknown-fields": True},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "granular"},
    "raw": {"x-kubernetes-preserve-unknown-fields": True},
}, required=["replicas"])


def test_valid_crd() -> None:
    assert validate_crd(crd(GOOD)) == []


def test_validate_crd_does_not_mutate_its_input() -> None:
    body = crd(GOOD)
    del body["spec"]["names"]["listKind"]
    before = copy.deepcopy(body)
    assert validate_crd(body) == []
    assert body == before


def test_crd_name_and_group() -> None:
    body = crd({"type": "object"})
    body["metadata"]["name"] = "widgets.example.com"
    body["spec"]["group"] = "example"
    assert crd_errors(body) == [
        'metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "example": should be a domain with at least one dot']
    # The DNS-subdomain rule for names is the generic object check's (apiserver.service), not repeated here.
    body = crd({"type": "object"})
    body["metadata"] = {"generateName": "widgets-"}
    assert crd_errors(body) == [
        'metadata.generateName: Invalid value: "widgets-": must be spec.names.plural+"."+spec.group']
    body["spec"]["group"] = ""
    assert "spec.group: Required value" in crd_errors(body)


def test_crd_names() -> None:
    body = crd({"type": "object"})
    body["spec"]["names"] = {"plural": "Widgets", "kind": "Widget_", "listKind": "Widget_", "shortNames": ["w-"],
                             "categories": ["all", "1x"]}
    body["metadata"]["name"] = "Widgets.example.spacehub.io"
    errors = crd_errors(body)
    label = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
             "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
             "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
    assert f'spec.names.plural: Invalid value: "Widgets": {label}' in errors
    assert f'spec.names.singular: Invalid value: "widget_": {label}' in errors  # defaulted from kind
    assert (f'spec.names.kind: Invalid value: "Widget_": may have mixed case, but should otherwise match: {label}'
            in errors)
    assert 'spec.names.listKind: Invalid value: "Widget_": kind and listKind may not be the same' in errors
    assert f'spec.names.shortNames[0]: Invalid value: "w-": {label}' in errors
    assert f'spec.names.categories[1]: Invalid value: "1x": {label}' in errors


def test_crd_scope() -> None:
    assert crd_errors(crd({"type": "object"}, scope="Global")) == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']
    assert crd_errors(crd({"type": "object"}, scope="")) == ["spec.scope: Required value"]


def test_crd_versions_storage_rules() -> None:
    body = crd({"type": "object"})
    body["spec"]["versions"][0]["storage"] = False
    versions = ('[{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,'
                '"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]')
    assert crd_errors(body) == [
        f"spec.versions: Invalid value: {versions}: must have exactly one version marked as storage version",
        "status.storedVersions: Invalid value: null: must have at least one stored version"]
    body = crd({"type": "object"})
    body["spec"]["versions"].append(dict(body["spec"]["versions"][0]))
    errors = crd_errors(body)
    assert any(e.startswith("spec.versions: Invalid value: [") and e.endswith("must contain unique version names")
               for e in errors)
    assert any(e.endswith("must have exactly one version marked as storage version") for e in errors)


def test_crd_version_names() -> None:
    body = crd({"type": "object"})
    body["spec"]["versions"][0]["name"] = "V1"
    body["status"] = {}
    errors = crd_errors(body)
    # The first version's name is validated again as the internal spec.version.
    assert [e.split(":")[0] for e in errors] == ["spec.versions[0].name", "spec.version"]


def test_crd_requires_a_schema() -> None:
    assert crd_errors(crd(None)) == ["spec.versions[0].schema.openAPIV3Schema: Required value"]


def test_structural_schema_rejections() -> None:
    schema = {"type": "object", "properties": {
        "spec": {"properties": {"a": {"type": "string"}}},
        "list": {"type": "array"},
        "anyof": {"type": "object", "anyOf": [{"type": "object", "description": "d",
                                              "properties": {"metadata": {}}}]},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True},
        "ios": {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True},
    }}
    base = "spec.validation.openAPIV3Schema"
    assert crd_errors(crd(schema)) == sorted([
        f"{base}.properties[anyof].anyOf[0].description: Forbidden: must be empty to be structural",
        f"{base}.properties[anyof].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested "
        "context",
        f"{base}.properties[anyof].anyOf[0].type: Forbidden: must be empty to be structural",
        f"{base}.properties[embedded].properties: Required value: must not be empty if x-kubernetes-embedded-resource "
        "is true without x-kubernetes-preserve-unknown-fields",
        f"{base}.properties[ios].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
        "x-kubernetes-int-or-string is true",
        f"{base}.properties[list].items: Required value: must be specified",
        f"{base}.properties[spec].type: Required value: must not be empty for specified object fields",
    ])


def test_root_schema_rules() -> None:
    base = "spec.validation.openAPIV3Schema"
    assert crd_errors(crd({"type": "integer"})) == [
        f'{base}.type: Invalid value: "integer": must be object at the root']
    assert crd_errors(crd({"properties": {"spec": {"type": "object"}}})) == [
        f"{base}.type: Required value: must not be empty at the root"]
    assert crd_errors(crd({"type": "object", "additionalProperties": {"type": "string"}})) == [
        f"{base}.additionalProperties: Forbidden: must not be used at the root"]
    assert crd_errors(crd({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5},
                                                      "labels": {"type": "object"}}}}})) == [
        f"{base}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
        "metadata is implicitly specified"]
    assert crd_errors(crd({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}},
        "kind": {"type": "integer"}}})) == [
        f'{base}.properties[kind].type: Invalid value: "integer": must be string']


def test_unsupported_keywords() -> None:
    base = "spec.validation.openAPIV3Schema"
    assert crd_errors(crd(spec_schema({"a": {"type": "string"}}, **{
        "$ref": "#/definitions/x", "additionalProperties": {"type": "string"}, "uniqueItems": True}))) == [
        f"{base}.properties[spec].$ref: Forbidden: $ref is not supported",
        f"{base}.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime "
        "complexity becomes quadratic",
        f"{base}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual "
        "exclusive"]
    assert crd_errors(crd(spec_schema({"a": {"type": "null"}}))) == [
        f'{SPEC}.properties[a].type: Unsupported value: "null": supported values: "array", "boolean", "integer", '
        '"number", "object", "string"',
        f"{SPEC}.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative"]


def test_dollar_schema_is_reported_when_nothing_else_is() -> None:
    assert crd_errors(crd({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"})) == [
        'spec.validation.openAPIV3Schema: Invalid value: "": OpenAPIV3Schema \'schema\' is not supported']


def test_defaults_must_validate_and_be_pruned() -> None:
    schema = spec_schema({
        "replicas": {"type": "integer", "maximum": 10, "default": 100},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "c"},
        "template": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
        "ok": {"type": "object", "properties": {"a": {"type": "string", "default": "z"}}, "default": {}},
    })
    assert crd_errors(crd(schema)) == [
        f"{SPEC}.properties[replicas].default: Invalid value: 100:  in body should be less than or equal to 10",
        f'{SPEC}.properties[mode].default: Unsupported value: "c": supported values: "a", "b"',
        f'{SPEC}.properties[template].default: Invalid value: {{"a":"x","b":1}}: must not have unknown fields']


def test_defaults_are_forbidden_in_top_level_metadata() -> None:
    schema = {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}},
        "apiVersion": {"type": "string", "default": "v1"}}}
    assert crd_errors(crd(schema)) == [
        "spec.validation.openAPIV3Schema.properties[metadata].properties[name].default: Forbidden: must not be set "
        "in top-level metadata",
        "spec.validation.openAPIV3Schema.properties[apiVersion].default: Forbidden: must not be set in top-level "
        "apiVersion"]


def test_list_type_consistency() -> None:
    schema = spec_schema({
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "proto"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "proto": {"type": "string", "nullable": True}}}},
        "keyless": {"type": "array", "x-kubernetes-list-type": "map",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "bad": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
        "notmap": {"type": "array", "x-kubernetes-list-map-keys": ["a"],
                   "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "missing": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["x"],
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "objects": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "scalar": {"type": "string", "x-kubernetes-list-type": "set"},
        "maptype": {"type": "object", "x-kubernetes-map-type": "merge"},
    })
    assert crd_errors(crd(schema)) == [
        f"{SPEC}.properties[ports].items.properties[proto].default: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property",
        f"{SPEC}.properties[ports].items.properties[proto].nullable: Forbidden: this property is in "
        "x-kubernetes-list-map-keys, so it cannot be nullable",
        f"{SPEC}.properties[keyless].x-kubernetes-list-map-keys: Required value: must not be empty if "
        "x-kubernetes-list-type is map",
        f'{SPEC}.properties[bad].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", '
        '"set", "map"',
        f"{SPEC}.properties[notmap].x-kubernetes-list-type: Required value: must be map if "
        "x-kubernetes-list-map-keys is non-empty",
        f'{SPEC}.properties[missing].x-kubernetes-list-map-keys: Invalid value: ["x"]: entries must all be names of '
        "item properties",
        f"{SPEC}.properties[objects].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a "
        "list with x-kubernetes-list-type=set",
        f'{SPEC}.properties[scalar].type: Invalid value: "string": must be array if x-kubernetes-list-type is '
        "specified",
        f'{SPEC}.properties[maptype].x-kubernetes-map-type: Unsupported value: "merge": supported values: '
        '"atomic", "granular"',
    ]


def test_invalid_pattern_in_schema() -> None:
    assert crd_errors(crd(spec_schema({"a": {"type": "string", "pattern": "(?=x)"}}))) == [
        f'{SPEC}.properties[a].pattern: Invalid value: "(?=x)": must be a valid regular expression, but isn\'t: '
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"]


def test_validation_rule_static_checks() -> None:
    schema = spec_schema({"a": {"type": "string"}}, **{"x-kubernetes-validations": [
        {"rule": " "}, {"rule": "self.a != ''", "message": "line\nbreak"},
        {"rule": "self.a != ''", "reason": "Bogus", "fieldPath": ".nope"}]})
    assert crd_errors(crd(schema)) == [
        f"{SPEC}.x-kubernetes-validations[0].rule: Required value: rule is not specified",
        f'{SPEC}.x-kubernetes-validations[1].message: Invalid value: "line\\nbreak": must not contain line breaks',
        f'{SPEC}.x-kubernetes-validations[2].reason: Unsupported value: "Bogus": supported values: '
        '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        f'{SPEC}.x-kubernetes-validations[2].fieldPath: Invalid value: ".nope": must be a valid path']


def test_subresources_scale_paths() -> None:
    body = crd(spec_schema({"replicas": {"type": "integer"}}))
    body["spec"]["versions"][0]["subresources"] = {"status": {}, "scale": {
        "specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas", "labelSelectorPath": "x"}}
    assert crd_errors(body) == [
        'spec.subresources.scale.specReplicasPath: Invalid value: "spec.replicas": must be a simple json path '
        "starting with .",
        'spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under '
        ".status",
        'spec.subresources.scale.labelSelectorPath: Invalid value: "x": must be a simple json path starting with .']
    body["spec"]["versions"][0]["subresources"]["scale"] = {}
    assert crd_errors(body) == ["spec.subresources.scale.specReplicasPath: Required value",
                                "spec.subresources.scale.statusReplicasPath: Required value"]


def test_status_subresource_restricts_the_root() -> None:
    body = crd({"type": "object", "anyOf": [{"required": ["spec"]}], "properties": {"spec": {"type": "object"}}})
    body["spec"]["versions"][0]["subresources"] = {"status": {}}
    [error] = crd_errors(body)
    assert error.startswith('spec.validation.openAPIV3Schema: Invalid value: {"ID":"","Schema":"","Ref":null,')
    assert error.endswith("only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
                          "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
                          "Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at "
                          "the root of the schema if the status subresource is enabled")


def test_printer_columns() -> None:
    body = crd({"type": "object"})
    body["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "", "type": "float", "format": "percent", "jsonPath": "spec.x"}]
    assert crd_errors(body) == [
        "spec.additionalPrinterColumns[1].name: Required value",
        'spec.additionalPrinterColumns[1].type: Invalid value: "float": must be one of '
        "boolean,date,integer,number,string",
        'spec.additionalPrinterColumns[1].format: Invalid value: "percent": must be one of '
        "byte,date,date-time,double,float,int32,int64,password",
        'spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.x": must be a simple json path starting '
        "with ."]


def test_selectable_fields() -> None:
    body = crd(spec_schema({"color": {"type": "string"}, "list": {"type": "array", "items": {"type": "string"}}}))
    body["spec"]["versions"][0]["selectableFields"] = [
        {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.list"},
        {"jsonPath": ".spec.nope"}]
    assert crd_errors(body) == [
        'spec.selectableFields[1].jsonPath: Duplicate value: ".spec.color"',
        'spec.selectableFields[2].jsonPath: Invalid value: ".spec.list": must point to a field of type string, '
        "boolean or integer. Enum string fields and strings with formats are allowed.",
        'spec.selectableFields[3].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a '
        "valid field"]


def test_a_conversion_webhook_needs_a_url_and_review_version_v1() -> None:
    webhook = {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "Webhook", "webhook": webhook})) == []
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "Webhook"})) == [
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
        "spec.conversion.conversionReviewVersions: Required value: must specify one of v1"]
    service = {"clientConfig": {"service": {"namespace": "default", "name": "convert"}},
               "conversionReviewVersions": ["v1beta1"]}
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "Webhook", "webhook": service})) == [
        "spec.conversion.webhookClientConfig.service: Forbidden: a space has no Services with endpoints to call; "
        "give the webhook's address in clientConfig.url",
        'spec.conversion.conversionReviewVersions: Invalid value: ["v1beta1"]: must include at least one '
        "of v1"]
    plain = {"clientConfig": {"url": "http://x"}, "conversionReviewVersions": ["v1"]}
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "Webhook", "webhook": plain})) == [
        "spec.conversion.webhookClientConfig.url: Invalid value: 'http://x': 'https' is the only allowed URL scheme"]
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "Other"})) == [
        'spec.conversion.strategy: Unsupported value: "Other": supported values: "None", "Webhook"']
    assert crd_errors(crd({"type": "object"}, conversion={"strategy": "None", "webhook": webhook})) == [
        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
        "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]


def test_errors_are_per_version_when_schemas_differ() -> None:
    body = crd({"type": "object", "properties": {"spec": {}}})
    body["spec"]["versions"].append({"name": "v2", "served": True, "storage": False,
                                     "schema": {"openAPIV3Schema": {"type": "object"}}})
    assert crd_errors(body) == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
        "specified object fields"]
    assert schema_field_path(body, 1) == "spec.versions[1].schema.openAPIV3Schema"
    assert schema_field_path(crd({"type": "object"}), 0) == "spec.validation.openAPIV3Schema"


def test_api_approval_for_protected_groups() -> None:
    body = crd({"type": "object"}, group="widgets.k8s.io")
    body["metadata"]["name"] = "widgets.widgets.k8s.io"
    assert crd_errors(body) == [
        'metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval '
        'annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111']
    body["metadata"]["annotations"] = {"api-approved.kubernetes.io": "https://github.com/kubernetes/x/pull/1"}
    assert crd_errors(body) == []
    body["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing"}
    assert crd_errors(body) == []


def test_update_rules() -> None:
    old = crd({"type": "object"})
    old["status"] = {"storedVersions": ["v1beta1", "v1"],
                     "conditions": [{"type": "Established", "status": "True"}]}
    new = crd({"type": "object"}, scope="Cluster")
    assert crd_errors(new, old) == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'status.storedVersions[0]: Invalid value: "v1beta1": missing from spec.versions; v1beta1 was previously a '
        "storage version, and must remain in spec.versions until a storage migration ensures no data remains "
        "persisted in v1beta1 and removes v1beta1 from status.storedVersions"]
    new = crd({"type": "object"}, group="other.spacehub.io")
    new["spec"]["versions"].insert(0, {"name": "v1beta1", "served": False, "storage": False,
                                       "schema": {"openAPIV3Schema": {"type": "object"}}})
    assert crd_errors(new, old) == ['spec.group: Invalid value: "other.spacehub.io": field is immutable']


def test_update_does_not_tighten_what_was_accepted() -> None:
    loose = spec_schema({"objects": {"type": "array", "x-kubernetes-list-type": "set",
                                     "items": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    old = crd(loose)
    assert crd_errors(crd(loose))  # rejected on create
    assert crd_errors(crd(loose), old) == []  # but an existing CRD keeps working


def test_scope_may_change_before_the_crd_is_established() -> None:
    old = crd({"type": "object"})
    assert crd_errors(crd({"type": "object"}, scope="Cluster"), old) == []


# --- helpers -------------------------------------------------------------------------------------


def test_default_crd() -> None:
    body: dict[str, Any] = {"spec": {"names": {"kind": "Widget", "plural": "widgets"}}}
    default_crd(body)
    assert body["spec"]["names"] == {"kind": "Widget", "plural": "widgets", "singular": "widget",
                                     "listKind": "WidgetList"}
    assert body["spec"]["conversion"] == {"strategy": "None"}


def test_crd_warnings() -> None:
    body = crd(spec_schema({
        "a": {"type": "string", "format": "int32"}, "b": {"type": "integer", "format": "int32"},
        "c": {"type": "string", "format": "int32"},
        "d": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}))
    assert crd_warnings(body) == [
        'unrecognized format "int32"',
        'x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL '
        "validation rules"]
    assert crd_warnings(body, body) == []
    assert crd_warnings(crd(GOOD)) == []


def test_schema_for_version_and_list_type_info() -> None:
    body = crd(GOOD)
    assert schema_for_version(body, "v1") is GOOD
    assert schema_for_version(body, "v2") is None
    legacy = {"spec": {"validation": {"openAPIV3Schema": GOOD}, "versions": [{"name": "v1beta1"}]}}
    assert schema_for_version(legacy, "v1beta1") is GOOD
    assert list_type_info(GOOD["properties"]["spec"]["properties"]["ports"]) == ("map", ("name",))
    assert list_type_info({"type": "array"}) == ("atomic", ())


# --- the agent-substrate CRDs ---------------------------------------------------------------------


def _corpus_crds() -> dict[str, dict[str, Any]]:
    if not os.path.isdir(CORPUS):
        pytest.skip(f"{CORPUS} is not available")
    out = {}
    for path in sorted(glob.glob(os.path.join(CORPUS, "ate.dev_*.yaml"))):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        out[doc["spec"]["names"]["kind"]] = doc
    return out


def test_agent_substrate_crds_are_valid() -> None:
    crds = _corpus_crds()
    assert sorted(crds) == ["ActorTemplate", "SandboxConfig", "WorkerPool"]
    for kind, body in crds.items():
        assert validate_crd(body) == [], kind


def test_sandbox_config_sha256_pattern() -> None:
    body = _corpus_crds()["SandboxConfig"]
    version = body["spec"]["versions"][0]["name"]
    schema = schema_for_version(body, version)
    assert schema is not None
    obj: dict[str, Any] = {
        "apiVersion": f"ate.dev/{version}", "kind": "SandboxConfig", "metadata": {"name": "gvisor"},
        "spec": {"assets": {"amd64": {"runsc": {"url": "gs://bucket/runsc", "sha256": "0" * 64}}}},
    }
    assert prune(obj, schema) == []
    default_object(obj, schema)
    assert obj["spec"]["sandboxClass"] == "gvisor"
    assert validate_object(obj, schema, "SandboxConfig") == []
    obj["spec"]["assets"]["amd64"]["runsc"]["sha256"] = "abc"
    assert render(validate_object(obj, schema, "SandboxConfig")) == [
        "spec.assets.amd64.runsc.sha256: Invalid value: \"abc\": spec.assets.amd64.runsc.sha256 in body should "
        "match '^[a-f0-9]{64}$'"]
