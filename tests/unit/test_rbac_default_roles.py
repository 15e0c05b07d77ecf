"""Every space has its own copy of the default ClusterRoles: the policy index keeps their rules once, shared by
reference, until a space changes its copy (10,000 spaces must not compile 10,000 copies of each)."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from apiserver.rbac import bootstrap
from apiserver.rbac.policy import CLUSTER_ROLES, PolicyIndex
from apiserver.store import Key, LogRow

VIEW = "system:aggregate-to-view"  # a default role with rules of its own (not aggregated)


def role_rows(spaces: Iterable[str]) -> list[LogRow]:
    rows = []
    for space in spaces:
        for role in bootstrap.cluster_roles():
            rows.append(LogRow(len(rows) + 1, Key(space, CLUSTER_ROLES, "", role["metadata"]["name"]), True, False, 0,
                               orjson.dumps(role)))
    return rows


def test_spaces_share_the_default_roles_rules_until_one_changes_its_copy() -> None:
    index = PolicyIndex()
    rows = role_rows(["a", "b"])
    index.load(lambda resource: [r for r in rows if r.key.resource == resource])
    a = index.role_rules("a", "ClusterRole", "", VIEW)
    b = index.role_rules("b", "ClusterRole", "", VIEW)
    assert a and a == b and a is b

    changed = next(role for role in bootstrap.cluster_roles() if role["metadata"]["name"] == VIEW)
    changed["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    index._apply(LogRow(len(rows) + 1, Key("b", CLUSTER_ROLES, "", VIEW), False, False, 0,
                        orjson.dumps(changed)), changed)
    mine = index.role_rules("b", "ClusterRole", "", VIEW)
    assert mine is not None and len(mine) == 1 and index.role_rules("a", "ClusterRole", "", VIEW) is a


def role_row(revision: int, space: str, role: dict[str, object]) -> LogRow:
    name = role["metadata"]["name"]  # type: ignore[index]
    return LogRow(revision, Key(space, CLUSTER_ROLES, "", str(name)), True, False, 0, orjson.dumps(role))


def test_identical_roles_in_many_spaces_share_one_record_and_labels_keep_them_apart() -> None:
    reader = {"metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    labelled = {**reader, "metadata": {"name": "reader", "labels": {"aggregate-to-all": "true"}}}
    everything = {"metadata": {"name": "all"},
                  "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"aggregate-to-all": "true"}}]}}
    rows = [role_row(1, "a", reader), role_row(2, "b", reader), role_row(3, "c", labelled),
            role_row(4, "a", everything), role_row(5, "c", everything)]
    index = PolicyIndex()
    index.load(lambda resource: [r for r in rows if r.key.resource == resource])

    a = index.role_rules("a", "ClusterRole", "", "reader")
    assert a and a is index.role_rules("b", "ClusterRole", "", "reader")
    assert index.role_rules("c", "ClusterRole", "", "reader") == a
    assert index.role_rules("c", "ClusterRole", "", "all") == a  # c's copy carries the label "all" selects
    assert index.role_rules("a", "ClusterRole", "", "all") == ()
