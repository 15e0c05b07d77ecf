"""Field tables of the ``rbac.authorization.k8s.io/v1`` messages (``k8s.io/api/rbac/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import KEEP, LIST, PTR, STRING, Table, table

MESSAGES: dict[str, Table] = {
    "rbac.Role": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "rules", "rbac.PolicyRule", LIST | KEEP),
    ),
    "rbac.ClusterRole": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "rules", "rbac.PolicyRule", LIST | KEEP),
        (3, "aggregationRule", "rbac.AggregationRule", PTR),
    ),
    "rbac.RoleBinding": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "subjects", "rbac.Subject", LIST),
        (3, "roleRef", "rbac.RoleRef", KEEP),
    ),
    "rbac.ClusterRoleBinding": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "subjects", "rbac.Subject", LIST),
        (3, "roleRef", "rbac.RoleRef", KEEP),
    ),
    "rbac.PolicyRule": table(
        (1, "verbs", STRING, LIST | KEEP),
        (2, "apiGroups", STRING, LIST),
        (3, "resources", STRING, LIST),
        (4, "resourceNames", STRING, LIST),
        (5, "nonResourceURLs", STRING, LIST),
    ),
    "rbac.AggregationRule": table(
        (1, "clusterRoleSelectors", "meta.LabelSelector", LIST),
    ),
    "rbac.Subject": table(
        (1, "kind", STRING, KEEP),
        (2, "apiGroup", STRING),
        (3, "name", STRING, KEEP),
        (4, "namespace", STRING),
    ),
    "rbac.RoleRef": table(
        (1, "apiGroup", STRING, KEEP),
        (2, "kind", STRING, KEEP),
        (3, "name", STRING, KEEP),
    ),
}
