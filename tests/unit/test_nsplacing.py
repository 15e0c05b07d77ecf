"""What a cluster gets of a mapped space (placement/nsplacing.py): entries naming the cluster object, objects in
the mapped namespace with their bindings' subjects mapped, and upsync rules naming cluster namespaces."""

from __future__ import annotations

from typing import Any

from placement.nsplacing import NamespacePlacing

RBAC = "rbac.authorization.k8s.io/v1"


def mapped() -> NamespacePlacing:
    placing = NamespacePlacing(lambda _space, _namespace: None, lambda _space: False)
    placing.space_changed("team-a", {"spec": {"namespaceMapping": {"template": "{{space}}-{{namespace}}"}}})
    return placing


def binding(kind: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "read"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "app"},
                         {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}


def test_bindings_and_their_subjects_move_with_the_namespace() -> None:
    placing = mapped()
    role_binding = placing.object("team-a", binding("RoleBinding", "app"))
    assert role_binding["metadata"]["namespace"] == "team-a-app"
    assert role_binding["subjects"][0]["namespace"] == "team-a-app"
    assert role_binding["subjects"][1] == binding("RoleBinding", "app")["subjects"][1]
    cluster_binding = placing.object("team-a", binding("ClusterRoleBinding", None))
    assert "namespace" not in cluster_binding["metadata"]
    assert cluster_binding["subjects"][0]["namespace"] == "team-a-app"


def test_entries_keep_the_space_s_names_and_unmapped_spaces_are_untouched() -> None:
    placing = mapped()
    entry = {"space": "team-a", "group": "", "resource": "configmaps", "namespace": "app", "name": "c"}
    assert placing.entry(entry) == {**entry, "namespace": "team-a-app", "spaceNamespace": "app"}
    ns = {"space": "team-a", "group": "", "resource": "namespaces", "namespace": "", "name": "app"}
    assert placing.entry(ns) == {**ns, "name": "team-a-app", "spaceName": "app"}
    other = {**entry, "space": "team-b"}
    assert placing.entry(other) is other


def test_upsync_rules_name_cluster_namespaces_and_keep_patterns() -> None:
    rule = {"space": "team-a", "placement": "p", "apiGroup": "", "resources": ["configmaps"],
            "namespaces": ["app", "logs-*"], "names": ["*"]}
    sent = mapped().upsync_rule(rule, ["web"])
    assert sent["namespaces"] == ["team-a-app", "logs-*"]
    assert sent["spaceNamespaces"] == {"team-a-app": "app", "team-a-web": "web"}


def test_a_rendered_name_over_63_characters_is_a_problem() -> None:
    placing = mapped()
    assert placing.problem("team-a", "app") is None
    problem = placing.problem("team-a", "n" * 60)
    assert problem is not None and "no more than 63 characters" in problem
