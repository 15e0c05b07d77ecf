"""The roles every space starts with: kube's bootstrap policy, sized for a space.

``cluster-admin``, the aggregated ``admin``/``edit``/``view`` roles (and the ``system:aggregate-to-*`` roles
holding their rules, so that a CRD's author can aggregate into them with the usual labels), and the roles every
authenticated identity holds once it may enter the space: discovery, ``/version`` and the self-reviews that
``kubectl auth can-i`` and ``whoami`` post. Created when missing, never overwritten: an administrator may
change them.

A space is a whole logical cluster, so ``edit`` here also creates namespaces and the cluster-scoped placement
kinds (a space's user needs both to describe a workload), and ``admin`` also manages ClusterRoles, their
bindings, CRDs, admission policies, APIExports and APIBindings; the escalation checks still keep anyone from
granting more than they hold.
"""

from __future__ import annotations

import functools
from typing import Any

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
DEFAULTS_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTHENTICATED = "system:authenticated"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]

# (group, resources) that view reads and edit writes; status subresources are read only.
WORKLOADS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("configmaps", "services", "serviceaccounts", "persistentvolumeclaims", "pods", "events", "limitranges",
          "resourcequotas", "namespaces")),
    ("apps", ("deployments", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets",
              "statefulsets/scale", "daemonsets")),
    ("batch", ("jobs", "cronjobs")),
    ("autoscaling", ("horizontalpodautoscalers",)),
    ("policy", ("poddisruptionbudgets",)),
    ("networking.k8s.io", ("ingresses", "networkpolicies")),
    ("events.k8s.io", ("events",)),
    ("edge.kubestellar.io", ("edgeplacements", "customizers", "locations", "synctargets")),
    ("control.kubestellar.io", ("statuscollectors",)),
)
READ_ONLY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("pods/log", "pods/status", "services/status", "persistentvolumeclaims/status", "resourcequotas/status",
          "namespaces/status")),
    ("apps", ("deployments/status", "replicasets/status", "statefulsets/status", "daemonsets/status")),
    ("batch", ("jobs/status", "cronjobs/status")),
    ("autoscaling", ("horizontalpodautoscalers/status",)),
    ("policy", ("poddisruptionbudgets/status",)),
    ("networking.k8s.io", ("ingresses/status",)),
    ("edge.kubestellar.io", ("edgeplacements/status", "singleplacementslices", "locations/status",
                             "synctargets/status")),
    ("control.kubestellar.io", ("combinedstatuses", "statuscollectors/status")),
    ("status.spacehub.io", ("placementstatuses",)),
    ("spacehub.io", ("spaces",)),
)
# What edit may do to running pods (debugging from the hub): kube's edit has the same on these subresources.
POD_STREAMS: tuple[tuple[str, tuple[str, ...]], ...] = (("", ("pods/attach", "pods/exec", "pods/portforward")),)
# Minting ServiceAccount tokens (kubectl create token): kube's edit may, so edit may here.
TOKEN_REQUESTS: tuple[tuple[str, tuple[str, ...]], ...] = (("", ("serviceaccounts/token",)),)
ADMINISTRATION: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rbac.authorization.k8s.io", ("roles", "rolebindings", "clusterroles", "clusterrolebindings")),
    ("apiextensions.k8s.io", ("customresourcedefinitions",)),
    ("admissionregistration.k8s.io", ("validatingadmissionpolicies", "validatingadmissionpolicybindings",
                                       "validatingwebhookconfigurations", "mutatingwebhookconfigurations")),
    # Binding another space's API needs "bind" on its export there too (spaces.apibinding.admission).
    ("apis.spacehub.io", ("apiexports", "apibindings")),
)


def _rules(groups: tuple[tuple[str, tuple[str, ...]], ...], verbs: list[str]) -> list[dict[str, Any]]:
    return [{"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)} for group, resources in groups]


def _role(name: str, rules: list[dict[str, Any]] | None = None, *, labels: dict[str, str] | None = None,
          aggregate_from: str = "") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                           "metadata": {"name": name, "labels": {**DEFAULTS_LABEL, **(labels or {})}}}
    if aggregate_from:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]}
    obj["rules"] = rules or []
    return obj


def _everyone(role: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": dict(DEFAULTS_LABEL)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AUTHENTICATED}]}


def cluster_roles() -> list[dict[str, Any]]:
    return [
        _role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _role("admin", aggregate_from="admin"),
        _role("edit", labels={AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        _role("view", labels={AGGREGATE + "edit": "true"}, aggregate_from="view"),
        _role("system:aggregate-to-view", _rules(WORKLOADS + READ_ONLY, READ), labels={AGGREGATE + "view": "true"}),
        _role("system:aggregate-to-edit", _rules(WORKLOADS, WRITE) + _rules((("", ("secrets",)), *POD_STREAMS),
                                                                             READ + WRITE)
              + _rules(TOKEN_REQUESTS, ["create"]),
              labels={AGGREGATE + "edit": "true"}),
        _role("system:aggregate-to-admin", _rules(ADMINISTRATION, READ + WRITE),
              labels={AGGREGATE + "admin": "true"}),
        _role("system:discovery", [{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/openapi",
                                                        "/openapi/*", "/version", "/version/"], "verbs": ["get"]}]),
        _role("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews",
                                                                  "selfsubjectrulesreviews"], "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]}]),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    return [_everyone("system:discovery"), _everyone("system:basic-user")]


@functools.cache
def default_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names of :func:`cluster_roles` and of :func:`cluster_role_bindings`: what every space's look-up at start
    needs, without building the objects for each of thousands of spaces that has them all."""
    return (tuple(role["metadata"]["name"] for role in cluster_roles()),
            tuple(binding["metadata"]["name"] for binding in cluster_role_bindings()))
