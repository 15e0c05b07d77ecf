"""Field selectors: the grammar and 400 wording of apimachinery, and each built-in kind's selectable fields,
found through the kind's strategy as the handlers find them."""

from __future__ import annotations

import pytest

from apimachinery.errors import StatusError
from apimachinery.fieldselectors import DEFAULT_FIELDS, FieldSelector, SelectableFields, parse_field_selector
from apiserver.builtin.clusterkinds import cluster_types
from apiserver.builtin.kinds import builtin_types
from apiserver.resourcetypes import ResourceType


def served(group: str, kind: str) -> ResourceType:
    found = [t for t in builtin_types() + cluster_types() if (t.group, t.kind) == (group, kind)]
    assert len(found) == 1, (group, kind)
    return found[0]


def fields_of(kind: str, group: str = "") -> SelectableFields:
    """A kind's selectable fields as the handlers reach them: through its ResourceType's strategy."""
    return served(group, kind).strategy.selectable_fields


def parse(text: str, kind: str, group: str = "") -> FieldSelector:
    return parse_field_selector(text, fields_of(kind, group))


# Each built-in kind with its own field-label conversion, and the fields upstream lets a client select
# it on (kube-apiserver's GetAttrs / AddFieldLabelConversionFunc of each registry).
KIND_FIELDS = {
    ("", "Pod"): {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
                  "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                  "status.podIP", "status.nominatedNodeName"},
    ("", "Node"): {"metadata.name", "spec.unschedulable"},
    ("", "Namespace"): {"metadata.name", "status.phase"},
    ("", "Secret"): {"metadata.name", "metadata.namespace", "type"},
    ("", "Service"): {"metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"},
    ("", "Event"): {"metadata.name", "metadata.namespace", "reason", "reportingComponent", "source", "type",
                    *(f"involvedObject.{f}" for f in ("kind", "namespace", "name", "uid", "apiVersion",
                                                      "resourceVersion", "fieldPath"))},
    ("events.k8s.io", "Event"): {"metadata.name", "metadata.namespace", "reason", "reportingController", "type",
                                 *(f"regarding.{f}" for f in ("kind", "namespace", "name", "uid", "apiVersion",
                                                              "resourceVersion", "fieldPath"))},
}


@pytest.mark.parametrize(("group", "kind"), sorted(KIND_FIELDS))
def test_each_kind_offers_its_fields_through_its_strategy(group: str, kind: str) -> None:
    fields = fields_of(kind, group)
    assert set(fields.names) == KIND_FIELDS[(group, kind)]
    assert fields.custom
    for name in fields.names:  # every one parses, so a request naming it is served
        assert parse_field_selector(f"{name}=x", fields).requirements[0].field == name


def test_other_kinds_offer_name_and_namespace_with_the_generic_wording() -> None:
    others = [t for t in builtin_types() + cluster_types() if (t.group, t.kind) not in KIND_FIELDS]
    assert len(others) > 10
    for rtype in others:
        assert rtype.strategy.selectable_fields.names == ("metadata.name", "metadata.namespace"), rtype.kind
        assert not rtype.strategy.selectable_fields.custom, rtype.kind


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
    assert parse(text, "ConfigMap").matches(POD) is expected


def test_field_selector_empty_and_hashable() -> None:
    assert parse("", "ConfigMap").empty
    assert not parse("metadata.name=a", "ConfigMap").empty
    a = parse("metadata.name=a,metadata.namespace=b", "ConfigMap")
    b = parse("metadata.namespace=b,metadata.name=a", "ConfigMap")
    assert a == b and hash(a) == hash(b) and isinstance(a, FieldSelector)
    assert parse("metadata.name=a", "ConfigMap").fields is DEFAULT_FIELDS


def test_missing_fields_compare_as_empty() -> None:
    cluster_scoped = {"metadata": {"name": "x"}}
    assert parse("metadata.namespace=", "ClusterRole", "rbac.authorization.k8s.io").matches(cluster_scoped)
    assert not parse("metadata.namespace=a", "ClusterRole", "rbac.authorization.k8s.io").matches(cluster_scoped)


@pytest.mark.parametrize(("text", "expected"), [
    ("involvedObject.kind=Pod", True), ("involvedObject.name=web-1", True),
    ("involvedObject.namespace=prod", True), ("involvedObject.uid=u1", True),
    ("involvedObject.apiVersion=v1", True), ("involvedObject.resourceVersion=7", True),
    ("involvedObject.fieldPath=spec.containers{a}", True),
    ("involvedObject.kind=Node", False), ("involvedObject.uid=u2", False),
    ("reason=Started", True), ("reason!=Started", False), ("type=Warning", False),
    ("source=kubelet", True), ("reportingComponent=kubelet", True), ("reportingComponent=ctrl", False),
    ("involvedObject.kind=Pod,involvedObject.name=web-2", False),
])
def test_event_fields(text: str, expected: bool) -> None:
    assert parse(text, "Event").matches(EVENT) is expected


def test_events_v1_fields_read_the_same_event() -> None:
    regarding = {**{k: v for k, v in EVENT.items() if k != "involvedObject"},
                 "regarding": EVENT["involvedObject"], "reportingController": "kubelet"}
    for shape in (EVENT, regarding):
        assert parse("regarding.name=web-1,reportingController=kubelet", "Event", "events.k8s.io").matches(shape)
        assert not parse("regarding.name=web-2", "Event", "events.k8s.io").matches(shape)


def test_event_source_falls_back_to_reporting_component() -> None:
    ev = {**EVENT, "source": {}, "reportingComponent": "ctrl"}
    assert parse("source=ctrl", "Event").matches(ev)
    assert not parse("source=kubelet", "Event").matches(ev)
    assert not parse("source=ctrl", "Event").matches({**ev, "reportingComponent": "other"})


def test_kind_specific_fields() -> None:
    secret = {"metadata": {"name": "s"}, "type": "kubernetes.io/tls"}
    assert parse("type=kubernetes.io/tls", "Secret").matches(secret)
    assert not parse("type!=kubernetes.io/tls", "Secret").matches(secret)
    ns = {"metadata": {"name": "prod"}, "status": {"phase": "Terminating"}}
    assert parse("status.phase=Terminating", "Namespace").matches(ns)
    assert not parse("status.phase=Active", "Namespace").matches(ns)
    assert not parse("type=Opaque", "Secret").matches(secret)
    pods = parse("spec.nodeName=n1,status.phase!=Failed,status.podIP=10.0.0.1", "Pod")
    assert pods.matches(POD)
    assert not parse("spec.nodeName=n2", "Pod").matches(POD)
    assert not parse("spec.nodeName=n1,status.podIP=10.0.0.2", "Pod").matches(POD)
    assert parse("status.podIP=10.0.0.9", "Pod").matches({"status": {"podIP": "10.0.0.9"}})
    assert parse("spec.hostNetwork=false", "Pod").matches(POD)
    assert not parse("spec.hostNetwork=true", "Pod").matches(POD)
    assert parse("spec.hostNetwork=true", "Pod").matches({**POD, "spec": {"hostNetwork": True}})
    assert parse("spec.unschedulable=false", "Node").matches({"metadata": {"name": "n"}})
    assert not parse("spec.unschedulable=true", "Node").matches({"metadata": {"name": "n"}})
    svc = {"metadata": {"name": "s", "namespace": "a"}, "spec": {"type": "NodePort", "clusterIP": "10.96.0.9"}}
    assert parse("spec.type=NodePort,spec.clusterIP=10.96.0.9", "Service").matches(svc)
    assert not parse("spec.type=ClusterIP", "Service").matches(svc)


def test_escaped_values() -> None:
    obj = {"metadata": {"name": "a,b=c\\d"}}
    s = parse(r"metadata.name=a\,b\=c\\d", "ConfigMap")
    assert s.matches(obj)
    assert s.exact_value("metadata.name") == "a,b=c\\d"
    assert str(s) == r"metadata.name=a\,b\=c\\d"


def test_exact_value() -> None:
    s = parse("metadata.namespace!=x,metadata.name==web-1", "Pod")
    assert s.exact_value("metadata.name") == "web-1"
    assert s.exact_value("metadata.namespace") is None
    assert parse("", "Pod").exact_value("metadata.name") is None
    # Terms are taken in sorted order, as upstream.
    assert parse("metadata.name=b,metadata.name=a", "Pod").exact_value("metadata.name") == "a"


def bad_field(text: str, kind: str, group: str = "") -> str:
    with pytest.raises(StatusError) as err:
        parse(text, kind, group)
    assert err.value.code == 400
    assert err.value.reason == "BadRequest"
    return err.value.message


@pytest.mark.parametrize(("text", "kind", "message"), [
    ("spec.foo=x", "ConfigMap",
     '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("spec.nodeName=x", "Deployment", '"spec.nodeName" is not a known field selector: only "metadata.name", '
                                      '"metadata.namespace"'),
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
    group = "apps" if kind == "Deployment" else ""
    assert bad_field(text, kind, group) == message


def test_involved_object_fields_are_not_offered_through_events_v1() -> None:
    assert bad_field("involvedObject.name=x", "Event", "events.k8s.io") == \
        "field label not supported: involvedObject.name"
