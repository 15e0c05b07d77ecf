"""Label and field selectors: grammar, matching and the 400 wording of apimachinery."""

from __future__ import annotations

import pytest

from apimachinery.errors import StatusError
from apimachinery.selectors import (
    FieldSelector,
    LabelSelector,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
    selectable_fields,
)

LABELS = {"app": "web", "tier": "front", "example.com/team": "a", "n": "5"}


def sel(text: str) -> LabelSelector:
    return parse_label_selector(text)


def bad_label(text: str) -> str:
    with pytest.raises(StatusError) as err:
        parse_label_selector(text)
    assert err.value.code == 400
    assert err.value.reason == "BadRequest"
    return err.value.message


@pytest.mark.parametrize(("text", "expected"), [
    ("app=web", True), ("app=api", False),
    ("app==web", True), ("app==api", False),
    ("app!=web", False), ("app!=api", True), ("missing!=x", True),
    ("app in (api,web)", True), ("app in (api)", False), ("missing in (x)", False),
    ("app notin (api)", True), ("app notin (web,api)", False), ("missing notin (x)", True),
    ("app", True), ("missing", False),
    ("!app", False), ("!missing", True),
    ("n>4", True), ("n>5", False), ("n<6", True), ("n<5", False), ("missing>1", False), ("app>1", False),
    ("example.com/team=a", True),
    ("app=web,tier=front", True), ("app=web,tier=back", False),
    ("  app = web ,  tier in ( front , back )  ", True),
    ("app in (web,,api)", True),
])
def test_operators(text: str, expected: bool) -> None:
    assert sel(text).matches(LABELS) is expected


def test_empty_value_and_empty_set() -> None:
    assert sel("x=").matches({"x": ""})
    assert not sel("x=").matches({})
    assert sel("x in ()").matches({"x": ""})
    assert sel("x in (,a)").matches({"x": ""})
    # Each is a real requirement, not one parsed as "match everything".
    assert not sel("x=").matches({"x": "a"})
    assert not sel("x in ()").matches({"x": "a"}) and not sel("x in ()").matches({})
    assert not sel("x in (,a)").matches({"x": "b"})


def test_keywords_are_values_in_value_position() -> None:
    assert sel("in in (in)").matches({"in": "in"})
    assert sel("notin=notin").matches({"notin": "notin"})
    assert not sel("in in (in)").matches({"in": "out"}) and not sel("in in (in)").matches({})
    assert not sel("notin=notin").matches({"notin": "in"})


def test_empty_selects_everything() -> None:
    for text in ("", "   "):
        s = sel(text)
        assert s.empty
        assert s.matches({}) and s.matches(None) and s.matches(LABELS)
    assert not sel("a").empty


def test_matches_none_labels() -> None:
    assert sel("!a").matches(None)
    assert not sel("a").matches(None)


def test_immutable_hashable_and_canonical() -> None:
    a, b = sel("b=1,a in (y,x)"), sel("a in (x,y),b=1")
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert str(a) == "a in (x,y),b=1"
    with pytest.raises(AttributeError):
        a.requirements = ()  # type: ignore[misc]


def test_requires_exact_match() -> None:
    assert sel("app=web,x!=y").requires_exact_match("app") == "web"
    assert sel("app in (web)").requires_exact_match("app") == "web"
    assert sel("app in (web,api)").requires_exact_match("app") is None
    assert sel("x!=y").requires_exact_match("x") is None


@pytest.mark.parametrize(("text", "message"), [
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("a=(", "unable to parse requirement: found '(', expected: identifier"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": "
            "for 'Gt', 'Lt' operators, the value must be an integer"),
])
def test_parse_errors(text: str, message: str) -> None:
    assert bad_label(text) == message


def test_invalid_key_and_value_wording() -> None:
    msg = bad_label("a/b/c")
    assert msg.startswith('unable to parse requirement: <nil>: Invalid value: "a/b/c": '
                          "a valid label key must consist of alphanumeric characters")
    msg = bad_label("Bad_Prefix/x=y")
    assert msg.startswith('unable to parse requirement: <nil>: Invalid value: "Bad_Prefix/x": prefix part a '
                          "lowercase RFC 1123 subdomain")
    msg = bad_label("a=-x")
    assert msg.startswith('unable to parse requirement: values[0][a]: Invalid value: "-x": '
                          "a valid label must be an empty string")
    assert "must be no more than 63 bytes" in bad_label("a=" + "v" * 64)
    assert "name part must be no more than 63 bytes" in bad_label("k" * 64)


def test_from_object() -> None:
    assert label_selector_from_object(None).matches(LABELS) is False
    assert not label_selector_from_object(None).empty
    assert label_selector_from_object({}).empty
    assert label_selector_from_object({"matchLabels": {}, "matchExpressions": []}).matches(LABELS)
    s = label_selector_from_object({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "back"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "n", "operator": "Exists"},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    })
    assert s.matches(LABELS)
    assert not s.matches({**LABELS, "env": "prod"})
    assert not s.matches({k: v for k, v in LABELS.items() if k != "n"})
    assert s == parse_label_selector("app=web,tier in (front,back),env notin (prod),n,!gone")


@pytest.mark.parametrize(("obj", "message"), [
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
     'values: Invalid value: ["x"]: values set must be empty for exists and does not exist'),
    ({"matchLabels": {"a/b/c": "x"}}, 'key: Invalid value: "a/b/c": a valid label key must consist'),
])
def test_from_object_errors(obj: dict, message: str) -> None:
    with pytest.raises(StatusError) as err:
        label_selector_from_object(obj)
    assert err.value.code == 400
    assert err.value.message.startswith(message)


# -- field selectors ------------------------------------------------------------------------------

POD = {"kind": "Pod", "metadata": {"name": "web-1", "namespace": "prod"},
       "spec": {"nodeName": "n1"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}}
EVENT = {"kind": "Event", "metadata": {"name": "ev", "namespace": "prod"},
         "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "prod", "uid": "u1",
                            "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{a}"},
         "reason": "Started", "type": "Normal", "source": {"component": "kubelet"},
         "reportingComponent": "kubelet"}


@pytest.mark.parametrize(("text", "expected"), [
    ("metadata.name=web-1", True), ("metadata.name==web-1", True), ("metadata.name=web-2", False),
    ("metadata.name!=web-2", True), ("metadata.name!=web-1", False),
    ("metadata.namespace=prod,metadata.name=web-1", True),
    ("metadata.namespace=prod,metadata.name!=web-1", False),
    ("", True), (",", True),
])
def test_field_operators(text: str, expected: bool) -> None:
    assert parse_field_selector(text, "ConfigMap").matches(POD) is expected


def test_field_selector_empty_and_hashable() -> None:
    assert parse_field_selector("", "ConfigMap").empty
    assert not parse_field_selector("metadata.name=a", "ConfigMap").empty
    a = parse_field_selector("metadata.name=a,metadata.namespace=b", "ConfigMap")
    b = parse_field_selector("metadata.namespace=b,metadata.name=a", "ConfigMap")
    assert a == b and hash(a) == hash(b) and isinstance(a, FieldSelector)


def test_missing_fields_compare_as_empty() -> None:
    cluster_scoped = {"metadata": {"name": "x"}}
    assert parse_field_selector("metadata.namespace=", "ClusterRole").matches(cluster_scoped)
    assert not parse_field_selector("metadata.namespace=a", "ClusterRole").matches(cluster_scoped)


@pytest.mark.parametrize(("text", "expected"), [
    ("involvedObject.kind=Pod", True), ("involvedObject.name=web-1", True),
    ("involvedObject.namespace=prod", True), ("involvedObject.uid=u1", True),
    ("involvedObject.apiVersion=v1", True), ("involvedObject.resourceVersion=7", True),
    ("involvedObject.fieldPath=spec.containers{a}", True),
    ("reason=Started", True), ("reason!=Started", False), ("type=Warning", False),
    ("source=kubelet", True), ("reportingComponent=kubelet", True),
    ("involvedObject.kind=Pod,involvedObject.name=web-2", False),
])
def test_event_fields(text: str, expected: bool) -> None:
    assert parse_field_selector(text, "Event").matches(EVENT) is expected


def test_event_source_falls_back_to_reporting_component() -> None:
    ev = {**EVENT, "source": {}, "reportingComponent": "ctrl"}
    assert parse_field_selector("source=ctrl", "Event").matches(ev)
    assert not parse_field_selector("source=kubelet", "Event").matches(ev)
    assert not parse_field_selector("source=ctrl", "Event").matches({**ev, "reportingComponent": "other"})


def test_kind_specific_fields() -> None:
    secret = {"metadata": {"name": "s"}, "type": "kubernetes.io/tls"}
    assert parse_field_selector("type=kubernetes.io/tls", "Secret").matches(secret)
    assert not parse_field_selector("type!=kubernetes.io/tls", "Secret").matches(secret)
    ns = {"metadata": {"name": "prod"}, "status": {"phase": "Terminating"}}
    assert parse_field_selector("status.phase=Terminating", "Namespace").matches(ns)
    assert not parse_field_selector("status.phase=Active", "Namespace").matches(ns)
    assert not parse_field_selector("type=Opaque", "Secret").matches(secret)
    pods = parse_field_selector("spec.nodeName=n1,status.phase!=Failed,status.podIP=10.0.0.1", "Pod")
    assert pods.matches(POD)
    assert not parse_field_selector("spec.nodeName=n2", "Pod").matches(POD)
    assert not parse_field_selector("spec.nodeName=n1,status.podIP=10.0.0.2", "Pod").matches(POD)
    assert parse_field_selector("spec.hostNetwork=false", "Pod").matches(POD)
    assert not parse_field_selector("spec.hostNetwork=true", "Pod").matches(POD)
    assert parse_field_selector("spec.unschedulable=false", "Node").matches({"metadata": {"name": "n"}})
    assert not parse_field_selector("spec.unschedulable=true", "Node").matches({"metadata": {"name": "n"}})
    assert "involvedObject.uid" in selectable_fields("Event")


def test_escaped_values() -> None:
    obj = {"metadata": {"name": "a,b=c\\d"}}
    s = parse_field_selector(r"metadata.name=a\,b\=c\\d", "ConfigMap")
    assert s.matches(obj)
    assert s.exact_value("metadata.name") == "a,b=c\\d"
    assert str(s) == r"metadata.name=a\,b\=c\\d"


def test_exact_value() -> None:
    s = parse_field_selector("metadata.namespace!=x,metadata.name==web-1", "Pod")
    assert s.exact_value("metadata.name") == "web-1"
    assert s.exact_value("metadata.namespace") is None
    assert parse_field_selector("", "Pod").exact_value("metadata.name") is None
    # Terms are taken in sorted order, as upstream.
    assert parse_field_selector("metadata.name=b,metadata.name=a", "Pod").exact_value("metadata.name") == "a"


def bad_field(text: str, kind: str) -> str:
    with pytest.raises(StatusError) as err:
        parse_field_selector(text, kind)
    assert err.value.code == 400
    assert err.value.reason == "BadRequest"
    return err.value.message


@pytest.mark.parametrize(("text", "kind", "message"), [
    ("spec.foo=x", "ConfigMap",
     '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("spec.foo=x", "Event", "field label not supported: spec.foo"),
    ("data=x", "Secret", "field label not supported: data"),
    ("metadata.namespace=x", "Namespace", "field label not supported: metadata.namespace"),
    ("metadata.name", "ConfigMap", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("a=b,c", "ConfigMap", "invalid selector: 'a=b,c'; can't understand 'c'"),
    ("metadata.name=a=b", "ConfigMap", "invalid field selector: unescaped character in value: 61"),
    (r"metadata.name=a\x", "ConfigMap", "invalid field selector: invalid escape sequence: \\x"),
    ("metadata.name=a\\", "ConfigMap", "invalid field selector: invalid escape sequence: \\"),
])
def test_field_errors(text: str, kind: str, message: str) -> None:
    assert bad_field(text, kind) == message
