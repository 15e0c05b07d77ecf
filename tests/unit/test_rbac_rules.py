"""RBAC rule matching and covering, case by case as kube's ``RuleAllows`` and ``validation.Covers`` decide."""

from __future__ import annotations

import pytest

from apiserver.access import Attributes, NonResourceRule, ResourceRule
from apiserver.rbac.rules import allows, describe, rules_of, uncovered


def rule(verbs: str, groups: str = "", resources: str = "", names: str = "") -> ResourceRule:
    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(",")) if text else ()

    return ResourceRule(split(verbs), tuple(groups.split(",")), split(resources), split(names))


@pytest.mark.parametrize(("granted", "request_", "allowed"), [
    (rule("get", "", "configmaps"), Attributes("get", "ns", "", "v1", "configmaps", "", "x"), True),
    (rule("get", "", "configmaps"), Attributes("list", "ns", "", "v1", "configmaps"), False),
    (rule("*", "", "configmaps"), Attributes("delete", "ns", "", "v1", "configmaps", "", "x"), True),
    (rule("get", "apps", "deployments"), Attributes("get", "ns", "", "v1", "deployments", "", "x"), False),
    (rule("get", "*", "deployments"), Attributes("get", "ns", "apps", "v1", "deployments", "", "x"), True),
    (rule("get", "apps", "deployments"), Attributes("get", "ns", "apps", "v1", "deployments", "status", "x"), False),
    (rule("get", "apps", "deployments/status"), Attributes("get", "ns", "apps", "v1", "deployments", "status", "x"),
     True),
    (rule("get", "apps", "*/scale"), Attributes("get", "ns", "apps", "v1", "statefulsets", "scale", "x"), True),
    (rule("get", "apps", "*/scale"), Attributes("get", "ns", "apps", "v1", "statefulsets", "", "x"), False),
    (rule("get", "apps", "*"), Attributes("get", "ns", "apps", "v1", "statefulsets", "scale", "x"), True),
    (rule("get", "", "configmaps", "a"), Attributes("get", "ns", "", "v1", "configmaps", "", "a"), True),
    (rule("get", "", "configmaps", "a"), Attributes("get", "ns", "", "v1", "configmaps", "", "b"), False),
    (rule("list", "", "configmaps", "a"), Attributes("list", "ns", "", "v1", "configmaps"), False),
    (NonResourceRule(("get",), ("/metrics",)), Attributes("get", path="/metrics"), True),
    (NonResourceRule(("get",), ("/apis/*",)), Attributes("get", path="/apis/apps/v1"), True),
    (NonResourceRule(("get",), ("/apis/*",)), Attributes("get", path="/api"), False),
    (NonResourceRule(("get",), ("*",)), Attributes("get", "ns", "", "v1", "configmaps"), False),
    (rule("*", "*", "*"), Attributes("get", path="/metrics"), False),
])
def test_a_rule_allows_exactly_what_kube_lets_it(granted: ResourceRule | NonResourceRule, request_: Attributes,
                                                 allowed: bool) -> None:
    assert allows(granted, request_) is allowed


def test_covering_breaks_requested_rules_down_and_honours_wildcards_and_names() -> None:
    held = [rule("get,list", "", "configmaps,secrets"), rule("*", "apps", "deployments"),
            rule("get", "apps", "*/scale"), rule("get", "", "services", "front"),
            NonResourceRule(("get",), ("/healthz/*",))]
    assert uncovered(held, [rule("list", "", "configmaps")]) == []
    assert uncovered(held, [rule("delete,patch", "apps", "deployments")]) == []
    assert uncovered(held, [rule("get", "apps", "statefulsets/scale")]) == []
    assert uncovered(held, [rule("get", "", "services", "front")]) == []
    assert uncovered(held, [NonResourceRule(("get",), ("/healthz/etcd",))]) == []
    # What is not held comes back piece by piece.
    assert uncovered(held, [rule("get,create", "", "configmaps")]) == [rule("create", "", "configmaps")]
    assert uncovered(held, [rule("get", "", "services")]) == [rule("get", "", "services")]  # all names > one name
    assert uncovered(held, [rule("*", "apps", "deployments")]) == []  # "*" is covered by "*" …
    assert uncovered([rule("get,list", "apps", "deployments")], [rule("*", "apps", "deployments")]) == [
        rule("*", "apps", "deployments")]  # … and by nothing less
    assert uncovered(held, [NonResourceRule(("get",), ("/metrics",))]) == [NonResourceRule(("get",), ("/metrics",))]


def test_rules_are_read_from_objects_and_described_as_kube_prints_them() -> None:
    read = rules_of({"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
                               {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, "junk"]})
    assert read == (rule("get", "apps", "deployments"), NonResourceRule(("get",), ("/metrics",)))
    assert describe(read[0]) == '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}'
    assert describe(rule("get", "", "secrets", "a")) == \
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}'
    assert describe(read[1]) == '{NonResourceURLs:["/metrics"], Verbs:["get"]}'
