"""Every space has its own copy of the default ClusterRoles and bindings: the policy index keeps them once, shared by
reference, until a space changes its copy (10,000 spaces must not compile 10,000 copies of each)."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from apiserver.identity import Identity
from apiserver.rbac import bootstrap
from apiserver.rbac.policy import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, PolicyIndex
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


def binding_rows(spaces: Iterable[str], first_revision: int) -> list[LogRow]:
    rows = []
    for space in spaces:
        for binding in bootstrap.cluster_role_bindings():
            rows.append(LogRow(first_revision + len(rows), Key(space, CLUSTER_ROLE_BINDINGS, "",
                                                                binding["metadata"]["name"]),
                               True, False, 0, orjson.dumps(binding)))
    return rows


def test_alike_spaces_share_one_record_until_one_changes_its_objects() -> None:
    """10,000 spaces holding only the default roles and bindings cost one record (memos included), loaded or
    written one object at a time; a change gives that space a record of its own and leaves the others as they
    were."""
    loaded = role_rows(["a", "b"])
    loaded += binding_rows(["a", "b"], len(loaded) + 1)
    index = PolicyIndex()
    index.load(lambda resource: [r for r in loaded if r.key.resource == resource])
    written = role_rows(["c"])
    written += binding_rows(["c"], len(written) + 1)
    for row in written:
        index._apply(row, orjson.loads(row.value))
    user = Identity("alice", ("system:authenticated",))
    grants = index.grants("a", user, "")
    assert [g.via for g in grants] == [
        'ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
        'ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"']
    assert index._spaces["a"] is index._spaces["b"] is index._spaces["c"]
    assert index.grants("c", user, "") is grants  # the memo is shared too

    alice_reads = {"metadata": {"name": "alice-reads"}, "subjects": [{"kind": "User", "name": "alice"}],
                   "roleRef": {"kind": "ClusterRole", "name": "view"}}
    index._apply(LogRow(100, Key("b", CLUSTER_ROLE_BINDINGS, "", "alice-reads"), True, False, 0,
                        orjson.dumps(alice_reads)), alice_reads)
    assert len(index.grants("b", user, "")) == 3
    assert index.grants("a", user, "") is grants and index.grants("c", user, "") is grants
    assert index.has_cluster_role_binding("b", "alice-reads") and not index.has_cluster_role_binding("a", "alice-reads")

    index._apply(LogRow(101, Key("b", CLUSTER_ROLE_BINDINGS, "", "alice-reads"), False, True, 100, b""), None)
    assert index._spaces["b"] is index._spaces["a"]  # alike again: shared again
    assert index.grants("b", user, "") is grants
