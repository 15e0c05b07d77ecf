"""apiserver.crdschema: custom resource validation, defaulting and pruning, RE2 patterns and string formats.

Expected messages are apiextensions-apiserver's and kube-openapi's wording (many are taken from
upstream's own tests), rendered as ``field: body`` like ``field.Error.Error()``.
"""

from __future__ import annotations

from typing import Any

import pytest
import re2

from apimachinery import gofmt
from apiserver.crdschema import (
    default_object,
    formats,
    prune,
    regex,
    validate_object,
    validate_scale,
    validate_status,
)
from tests.crdschema_cases import check, field, render

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
