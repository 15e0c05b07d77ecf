"""apiserver.crdschema: CRD validation, pruning, defaulting and custom resource validation.

Expected messages are apiextensions-apiserver's and kube-openapi's wording (many are taken from
upstream's own tests), rendered as ``field: body`` like ``field.Error.Error()``.
"""

from __future__ import annotations

import copy
import glob
import os
from typing import Any

import pytest
import re2
import yaml

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import (
    crd_warnings,
    default_crd,
    default_object,
    formats,
    list_type_info,
    prune,
    regex,
    schema_field_path,
    schema_for_version,
    validate_crd,
    validate_object,
    validate_scale,
    validate_status,
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


# --- Go renderings -------------------------------------------------------------------------------


def test_go_value_renderings() -> None:
    assert gofmt.go_float(100.0) == "100"
    assert gofmt.go_float(1e6) == "1e+06"
    assert gofmt.go_float(123456.0) == "123456"
    assert gofmt.go_float(1.5) == "1.5"
    assert gofmt.go_float(1e-5) == "1e-05"
    assert gofmt.json_float(1e-7) == "1e-7"
    assert gofmt.json_float(1e6) == "1000000"
    assert gofmt.go_quote('a"b\n\x01\u00a0é') == '"a\\"b\\n\\x01\\u00a0é"'
    assert gofmt.json_marshal({"b": [1, 2.5, "<x>"], "a": None}) == '{"a":null,"b":[1,2.5,"\\u003cx\\u003e"]}'


# --- RE2 patterns ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "error"), [
    ("a**", "invalid nested repetition operator: `**`"),
    ("*", "missing argument to repetition operator: `*`"),
    ("a|+", "missing argument to repetition operator: `+`"),
    ("(a", "missing closing ): `(a`"),
    ("a)", "unexpected ): `a)`"),
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(?P=n)", "invalid or unsupported Perl syntax: `(?P`"),
    ("\\1", "invalid escape sequence: `\\1`"),
    ("[b-a]", "invalid character class range: `b-a`"),
    ("[a", "missing closing ]: `[a`"),
    ("\\p{Nope}", "invalid character class range: `\\p{Nope}`"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("(a{100}){20}", "invalid repeat count: `{20}`"),
    ("\\", "trailing backslash at end of expression: ``"),
    ("\\p", "invalid character class range: `\\p`"),
])
def test_regex_errors_are_go_errors(pattern: str, error: str) -> None:
    assert regex.check(pattern) == f"error parsing regexp: {error}"


@pytest.mark.parametrize("path", ["direct", "translated"])
def test_regex_matches_like_go(path: str) -> None:
    """RE2 matches the pattern as written, or (for a \\p name RE2 spells differently) the same pattern with its
    classes spelled out as ranges: both read every pattern as Go does."""
    def matches(pattern: str, text: str) -> bool:
        if path == "direct":
            return regex.compile(pattern).search(text)
        return re2.compile(regex.translate(pattern)).search(text) is not None

    assert matches("^[a-f0-9]{64}$", "a" * 64)
    assert not matches("^[a-f0-9]{64}$", "a" * 64 + "\n")  # $ is the end of the text in Go
    assert matches("a{,3}", "a{,3}")  # not a repetition in RE2
    assert not matches("\\d", "\u0663")  # \d is ASCII
    assert matches("(?i)straße", "STRAßE")
    assert matches("^/([A-Za-z0-9\\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$", "/readyz")
    assert not matches("^[ -<>-~]+$", "a=b")
    assert matches("\\pL", "é")
    assert matches("^\\Q.*\\E$", ".*")
    assert not matches("^\\Q.*\\E$", "ab")
    assert matches("\\bword\\b", "a word here") and not matches("\\bword\\b", "swordfish")
    assert matches("^a\\z", "a") and not matches("^a\\z", "a\n")
    assert matches("[^\\pL]", "1") and not matches("^[^\\pL]$", "é")


def test_a_pattern_this_server_cannot_match_is_refused_not_waved_through() -> None:
    # Go accepts \p{Greek}; a class the translator cannot spell out and RE2 refuses must never match everything.
    assert regex.check("\\p{Greek}") is None  # RE2 knows the script itself
    assert regex.compile("^\\p{Greek}+$").search("αβγ") and not regex.compile("^\\p{Greek}+$").search("abc")


# --- string formats -------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "good", "bad"), [
    ("uri", ["http://example.com/a?b", "/path", "mailto:x"], ["relative", "http://a b/", "http://x:8o/"]),
    ("email", ["a@b.c", "Joe <joe@x.org>"], ["a@", "@b", "a.@b"]),
    ("ipv4", ["1.2.3.4", "01.2.3.4"], ["1.2.3", "256.1.1.1"]),
    ("ipv6", ["::1", "fe80::1"], ["1.2.3.4", "fe80::1%eth0", "1::2::3"]),
    ("cidr", ["10.0.0.0/8", "::/0"], ["10.0.0.0/33", "10.0.0.0"]),
    ("mac", ["00:00:5e:00:53:01", "0000.5e00.5301"], ["00:00:5e:00:53"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567"]),
    ("date", ["2024-02-29"], ["2023-02-29", "2024-13-01"]),
    ("date-time", ["2024-01-01T00:00:00Z", "2024-01-01t10:00:00.5+01:00"], ["2024-01-01T24:00:00Z", "2024"]),
    ("duration", ["1h30m", "5 days"], ["soon"]),
    ("hostname", ["example.com", "a-b"], ["-a", "ex_ample.com"]),
    ("byte", ["aGk="], ["", "aGk"]),
    ("k8s-short-name", ["a-b"], ["A", "a."]),
    ("k8s-long-name", ["a.b-c"], ["a..b"]),
])
def test_formats(fmt: str, good: list[str], bad: list[str]) -> None:
    assert all(formats.validates(fmt, v) for v in good)
    assert not any(formats.validates(fmt, v) for v in bad)


def test_unsupported_formats_are_not_checked() -> None:
    assert check({"field": "whatever"}, field({"type": "string", "format": "int32"})) == []
    assert check({"field": "whatever"}, field({"type": "string", "format": "made-up"})) == []
    assert check({"field": "not-an-ip"}, field({"type": "string", "format": "ipv4"})) == [
        'field: Invalid value: "not-an-ip": field in body must be of type ipv4: "not-an-ip"']


# --- custom resource validation: one keyword at a time -------------------------------------------


@pytest.mark.parametrize(("value", "type_name"), [
    ("foo", "string"), (42, "integer"), (True, "boolean"), (1.2, "number"), ([], "array"), (None, "null"),
])
def test_type(value: Any, type_name: str) -> None:
    schema = field({"type": "object"})
    assert check({"field": {}}, schema) == []
    assert check({"field": value}, schema) == [
        f'field: Invalid value: "{type_name}": field in body must be of type object: "{type_name}"']


def test_type_causes_have_the_type_invalid_reason() -> None:
    [cause] = validate_object({"field": "x"}, field({"type": "integer"}), "")
    assert (cause.type, cause.field) == ("FieldValueTypeInvalid", "field")


def test_nullable() -> None:
    schema = field({"type": "object", "nullable": True})
    assert check({"field": None}, schema) == []
    assert check({"field": 1}, schema) == [
        'field: Invalid value: "integer": field in body must be of type object: "integer"']


def test_integral_floats_are_integers() -> None:
    assert check({"field": 3.0}, field({"type": "integer"})) == []
    assert check({"field": 3.5}, field({"type": "integer"})) == [
        'field: Invalid value: "number": field in body must be of type integer: "number"',
        '<nil>: Invalid value: "": Checked value must be of type integer (default format) in field']


def test_int_or_string() -> None:
    schema = field({"x-kubernetes-int-or-string": True})
    assert check({"field": 42}, schema) == []
    assert check({"field": "50%"}, schema) == []
    assert check({"field": True}, schema) == [
        'field: Invalid value: "boolean": field in body must be of type integer,string: "boolean"']


def test_int_or_string_with_any_of_reports_the_best_alternative() -> None:
    schema = field({"x-kubernetes-int-or-string": True, "nullable": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert sorted(check({"field": 1.2}, schema)) == sorted([
        '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
        'field: Invalid value: "number": field in body must be of type integer,string: "number"',
        'field: Invalid value: "number": field in body must be of type integer: "number"',
        '<nil>: Invalid value: "": Checked value must be of type integer (default format) in field',
    ])


def test_numeric_formats() -> None:
    schema = {"type": "object", "properties": {"i32": {"type": "integer", "format": "int32"},
                                               "f32": {"type": "number", "format": "float"}}}
    assert check({"i32": 2**31 - 1, "f32": 3.4028234663852886e38}, schema) == []
    assert check({"i32": 2**31}, schema) == [
        '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in i32']
    assert check({"f32": 3.5e38}, schema) == [
        '<nil>: Invalid value: "": Checked value must be of type number with format float in f32']


def test_enum() -> None:
    schema = field({"type": "object", "required": ["n", "s"], "properties": {
        "n": {"type": "integer", "enum": [1, 2]}, "s": {"type": "string", "enum": ["a", "b"]}}})
    assert check({"field": {"n": 1, "s": "b"}}, schema) == []
    assert check({"field": {"n": "x", "s": True}}, schema) == [
        'field.n: Invalid value: "string": field.n in body must be of type integer: "string"',
        'field.n: Unsupported value: "x": supported values: "1", "2"',
        'field.s: Invalid value: "boolean": field.s in body must be of type string: "boolean"',
        'field.s: Unsupported value: true: supported values: "a", "b"',
    ]
    [cause] = validate_object({"field": {"n": 3, "s": "a"}}, schema, "")
    assert cause.type == "FieldValueNotSupported"


def test_pattern() -> None:
    schema = field({"type": "string", "pattern": "^[a-f0-9]{64}$"})
    assert check({"field": "0" * 64}, schema) == []
    assert check({"field": "abc"}, schema) == [
        "field: Invalid value: \"abc\": field in body should match '^[a-f0-9]{64}$'"]
    assert check({"field": "foo"}, field({"type": "string", "pattern": "+"})) == [
        "field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: error parsing "
        "regexp: missing argument to repetition operator: `+`'"]


def test_minimum_maximum() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
        "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": True,
                  "maximum": 1e6, "exclusiveMaximum": True}}}}}
    assert check({"spec": {"replicas": 100, "ratio": 0.75}}, schema) == []
    assert check({"spec": {"replicas": 1000, "ratio": 0.5}}, schema) == [
        "spec.replicas: Invalid value: 1000: spec.replicas in body should be less than or equal to 100",
        "spec.ratio: Invalid value: 0.5: spec.ratio in body should be greater than 0.5"]
    assert check({"spec": {"replicas": -1, "ratio": 1e6}}, schema) == [
        "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        "spec.ratio: Invalid value: 1e+06: spec.ratio in body should be less than 1e+06"]


def test_multiple_of() -> None:
    assert check({"field": 8}, field({"type": "integer", "multipleOf": 2})) == []
    assert check({"field": 7}, field({"type": "integer", "multipleOf": 2})) == [
        "field: Invalid value: 7: field in body should be a multiple of 2"]
    assert check({"field": 0.3}, field({"type": "number", "multipleOf": 0.1})) == []
    assert check({"field": 0.35}, field({"type": "number", "multipleOf": 0.1})) == [
        "field: Invalid value: 0.35: field in body should be a multiple of 0.1"]


def test_string_lengths_count_runes() -> None:
    schema = field({"type": "string", "minLength": 2, "maxLength": 3})
    assert check({"field": "ééé"}, schema) == []
    assert check({"field": "abcd"}, schema) == ["field: Too long: may not be more than 3 bytes"]
    assert check({"field": "é"}, schema) == ['field: Invalid value: "é": field in body should be at least 2 chars long']
    [cause] = validate_object({"field": "abcd"}, schema, "")
    assert cause.type == "FieldValueTooLong"


def test_items_counts() -> None:
    schema = field({"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}})
    assert check({"field": ["a"]}, schema) == []
    assert check({"field": []}, schema) == ["field: Invalid value: 0: field in body should have at least 1 items"]
    assert check({"field": list("abcde")}, schema) == ["field: Too many: 5: must have at most 3 items"]
    assert check({"field": ["a", 1]}, schema) == [
        'field[1]: Invalid value: "integer": field[1] in body must be of type string: "integer"']


def test_property_counts() -> None:
    schema = field({"type": "object", "minProperties": 1, "maxProperties": 2,
                    "additionalProperties": {"type": "string"}})
    assert check({"field": {"a": "x"}}, schema) == []
    assert check({"field": {}}, schema) == ["field: Invalid value: 0: field in body should have at least 1 properties"]
    assert check({"field": {"a": "1", "b": "2", "c": 3}}, schema) == [
        "field: Too many: 3: must have at most 2 items",
        'field.c: Invalid value: "integer": field.c in body must be of type string: "integer"']


def test_required() -> None:
    schema = {"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["image"], "properties": {"image": {"type": "string"}}}}}
    assert check({"test": "a"}, schema) == ["spec: Required value"]
    assert check({"spec": {}}, schema) == ["spec.image: Required value"]
    assert check({"spec": {"image": None}}, schema) == [
        'spec.image: Invalid value: "null": spec.image in body must be of type string: "null"']


def test_unique_items() -> None:
    schema = field({"type": "array", "uniqueItems": True, "items": {"x-kubernetes-int-or-string": True}})
    assert check({"field": [1, "1", 1.5]}, schema) == [
        'field[2]: Invalid value: "number": field[2] in body must be of type integer,string: "number"']
    assert check({"field": [1, 2, 1]}, schema) == [
        'field: Invalid value: "": field in body shouldn\'t contain duplicates']


def test_junctors() -> None:
    assert check({"x": "ab"}, {"type": "object", "properties": {"x": {
        "type": "string", "allOf": [{"minLength": 1}, {"maxLength": 1}]}}}) == [
        "x: Too long: may not be more than 1 byte",
        '<nil>: Invalid value: "": "x" must validate all the schemas (allOf)']
    assert check({"x": "a"}, {"type": "object", "properties": {"x": {
        "type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "^a$"}]}}}) == [
        '<nil>: Invalid value: "": "x" must validate one and only one schema (oneOf). Found 2 valid alternatives']
    assert check({"x": "b"}, {"type": "object", "properties": {"x": {"type": "string", "not": {"pattern": "b"}}}}) == [
        '<nil>: Invalid value: "": "x" must not validate the schema (not)']
    assert check({"x": "c"}, {"type": "object", "properties": {"x": {
        "type": "string", "anyOf": [{"pattern": "a"}, {"pattern": "c"}]}}}) == []


def test_additional_properties_false() -> None:
    schema = field({"type": "object", "additionalProperties": False})
    assert check({"field": {}}, schema) == []
    assert check({"field": {"a": 1}}, schema) == [
        'field: Invalid value: "a": field.a in body is a forbidden property']


def test_root_metadata_name_is_a_dns_subdomain() -> None:
    assert check({"metadata": {"name": "my-widget.v2"}}, {"type": "object"}) == []
    assert check({"metadata": {"name": "My_Widget"}}, {"type": "object"}) == [
        'metadata.name: Invalid value: "My_Widget": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')"]


def test_the_name_check_can_be_left_to_the_caller() -> None:
    assert validate_object({"metadata": {"name": "My_Widget"}}, {"type": "object"}, "", check_name=False) == []


def test_kind_must_match() -> None:
    assert validate_object({"kind": "Widget"}, {"type": "object"}, "Widget") == []
    assert render(validate_object({"kind": "Gadget", "x": 1}, {"type": "object", "required": ["y"]}, "Widget")) == [
        'kind: Invalid value: "Gadget": must be Widget']


def test_embedded_resources() -> None:
    schema = field({"type": "object", "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True})
    assert check({"field": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}, schema) == []
    assert check({"field": {"metadata": {"name": "a/b", "labels": {"ok": "@"}}}}, schema) == [
        "field.apiVersion: Required value",
        "field.kind: Required value",
        "field.metadata.name: Invalid value: \"a/b\": may not contain '/'",
        'field.metadata.labels: Invalid value: "@": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
    assert check({"field": {"apiVersion": "a/b/c", "kind": "my_kind"}}, schema) == [
        'field.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
        'field.kind: Invalid value: "my_kind": may have mixed case, but should otherwise match: a DNS-1035 label '
        "must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end "
        "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')"]


def test_list_type_set_and_map() -> None:
    schema = {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                            "port": {"type": "integer"}}}},
        "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                   "items": {"type": "object", "properties": {"host": {"type": "string"},
                                                             "path": {"type": "string"}}}}}}
    assert check({"tags": ["a", "b"], "ports": [{"name": "a"}, {"name": "b"}],
                  "routes": [{"host": "h", "path": "/"}, {"host": "h", "path": "/x"}]}, schema) == []
    assert check({"tags": ["a", "b", "a", "a"], "ports": [{"name": "x"}, {"name": "x", "port": 2}, {"port": 1}, {}],
                  "routes": [{"host": "h", "path": "/"}, {"path": "/", "host": "h"}]}, schema) == [
        'tags[2]: Duplicate value: "a"',
        'ports[1]: Duplicate value: {"name":"x"}',
        "ports[3]: Duplicate value: {}",
        'routes[1]: Duplicate value: {"host":"h","path":"/"}']
    # Go compares scalars by type: 1 and 1.0 are different set elements.
    assert check({"n": [1, 1.0]}, {"type": "object", "properties": {"n": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}}}}) == []


def test_validate_status() -> None:
    schema = {"type": "object", "properties": {"status": {"type": "object", "properties": {
        "num": {"type": "integer", "maximum": 10}}}}}
    assert render(validate_status({"status": {"num": 15}}, schema)) == [
        "status.num: Invalid value: 15: num in body should be less than or equal to 10"]


def test_validate_scale() -> None:
    scale = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
             "labelSelectorPath": ".status.selector"}
    assert validate_scale({"spec": {"replicas": 3}, "status": {"replicas": 1, "selector": "a=b"}}, scale) == []
    assert render(validate_scale({"spec": {"replicas": -1}, "status": {"replicas": "x", "selector": 1}}, scale)) == [
        ".spec.replicas: Invalid value: -1: should be a non-negative integer",
        ".status.replicas: Invalid value: 0: .status.replicas accessor error: x is of the type string, expected int64",
        '.status.selector: Invalid value: "": .status.selector accessor error: 1 is of the type int64, expected '
        "string"]


# --- defaulting ----------------------------------------------------------------------------------

DEFAULTS = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "replicas": {"type": "integer", "default": 1},
    "mode": {"type": "string", "default": "safe"},
    "nullable": {"type": "string", "nullable": True, "default": "x"},
    "template": {"type": "object", "default": {}, "properties": {
        "image": {"type": "string", "default": "busybox"}}},
    "resources": {"type": "object", "properties": {"cpu": {"type": "string", "default": "100m"}}},
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "protocol": {"type": "string", "default": "TCP"}}}},
    "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "weight": {"type": "integer", "default": 10}}}},
    "matrix": {"type": "array", "items": {"type": "string", "default": "cell"}},
}}}}


def test_defaults_nested_objects_items_and_map_values() -> None:
    obj: dict[str, Any] = {"spec": {"ports": [{}, {"protocol": "UDP"}], "labels": {"a": {}, "b": {"weight": 1}},
                                    "matrix": ["x", None], "nullable": None, "mode": None}}
    default_object(obj, DEFAULTS)
    assert obj["spec"] == {
        "replicas": 1, "mode": "safe", "nullable": None,
        # A defaulted parent is itself defaulted further.
        "template": {"image": "busybox"},
        "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}],
        "labels": {"a": {"weight": 10}, "b": {"weight": 1}},
        "matrix": ["x", "cell"],
    }


def test_defaults_are_not_applied_in_a_missing_parent() -> None:
    obj: dict[str, Any] = {}
    default_object(obj, DEFAULTS)
    assert obj == {}
    obj = {"spec": {}}
    default_object(obj, DEFAULTS)
    assert "resources" not in obj["spec"]
    assert obj["spec"]["template"] == {"image": "busybox"}


def test_defaults_are_copied() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", "default": {"x": [1]}},
                                               "b": {"type": "object", "default": {"x": [1]}}}}
    one: dict[str, Any] = {}
    two: dict[str, Any] = {}
    default_object(one, schema)
    default_object(two, schema)
    one["a"]["x"].append(2)
    assert two["a"] == {"x": [1]}


# --- pruning -------------------------------------------------------------------------------------

PRUNING = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "image": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                  "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
        "replicas": {"type": "integer"},
        "mode": {"type": "string", "default": "safe"},
    }},
}}


def test_prune_removes_unknown_fields_and_reports_them() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "w"},
        "status": {"x": 1},
        "spec": {"image": "a", "bogus": True, "ports": [{"port": 1, "name": "p"}],
                 "extra": {"anything": {"goes": 1}, "known": {"a": "x", "b": "y"}},
                 "labels": {"k": "v"},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1},
                              "spec": {"x": "y", "z": 1}, "other": 2}},
    }
    assert prune(obj, PRUNING) == [
        "spec.bogus", "spec.extra.known.b", "spec.ports[0].name", "spec.template.other", "spec.template.spec.z",
        "status", "spec.template.metadata.junk"]
    assert obj == {
        "apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"image": "a", "ports": [{"port": 1}],
                 "extra": {"anything": {"goes": 1}, "known": {"a": "x"}},
                 "labels": {"k": "v"},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}}},
    }


def test_prune_drops_nulls_that_cannot_be_kept() -> None:
    obj: dict[str, Any] = {"spec": {"replicas": None, "mode": None, "image": "a"}}
    assert prune(obj, PRUNING) == []
    # A non-nullable null is dropped, unless it has a default, which defaulting then applies.
    assert obj == {"spec": {"mode": None, "image": "a"}}
    default_object(obj, PRUNING)
    assert obj == {"spec": {"mode": "safe", "image": "a"}}


def test_prune_keeps_root_type_and_object_meta() -> None:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "K", "metadata": {"anything": 1}, "other": 1}
    assert prune(obj, {"type": "object"}) == ["other"]
    assert obj == {"apiVersion": "v1", "kind": "K", "metadata": {"anything": 1}}
    nested: dict[str, Any] = {"spec": {"metadata": {"a": 1}}}
    assert prune(nested, {"type": "object", "properties": {"spec": {"type": "object", "properties": {}}}}) == [
        "spec.metadata"]


def test_prune_preserve_unknown_at_the_root() -> None:
    obj: dict[str, Any] = {"anything": {"x": 1}, "spec": {"a": 1, "b": 2}}
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"spec": {"type": "object", "properties": {"a": {"type": "integer"}}}}}
    assert prune(obj, schema) == ["spec.b"]
    assert obj == {"anything": {"x": 1}, "spec": {"a": 1}}


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
