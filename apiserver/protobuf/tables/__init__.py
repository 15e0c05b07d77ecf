"""Every field table, keyed ``"<group>.<Type>"``, and the kinds a protobuf request body may carry.

The tables cover exactly the objects ``kubectl create <generator>``, ``kubectl autoscale`` and ``kubectl auth``
send and everything nested in them; :data:`KINDS` maps each of those kinds to its top-level message.
"""

from __future__ import annotations

from apiserver.protobuf.schema import Table
from apiserver.protobuf.tables import (
    apps,
    authz,
    autoscaling,
    batch,
    core,
    meta,
    networking,
    pods,
    policy,
    rbac,
    scheduling,
    volumes,
)

MESSAGES: dict[str, Table] = {
    **meta.MESSAGES, **core.MESSAGES, **pods.MESSAGES, **volumes.MESSAGES, **apps.MESSAGES, **batch.MESSAGES,
    **rbac.MESSAGES, **policy.MESSAGES, **scheduling.MESSAGES, **networking.MESSAGES, **authz.MESSAGES,
    **autoscaling.MESSAGES,
}

# The protobuf package behind each key prefix, for naming a message in an error the way protoc does.
PROTO_PACKAGES = {
    "meta": "k8s.io.apimachinery.pkg.apis.meta.v1",
    "resource": "k8s.io.apimachinery.pkg.api.resource",
    "intstr": "k8s.io.apimachinery.pkg.util.intstr",
    "runtime": "k8s.io.apimachinery.pkg.runtime",
    "core": "k8s.io.api.core.v1",
    "apps": "k8s.io.api.apps.v1",
    "batch": "k8s.io.api.batch.v1",
    "rbac": "k8s.io.api.rbac.v1",
    "policy": "k8s.io.api.policy.v1",
    "scheduling": "k8s.io.api.scheduling.v1",
    "networking": "k8s.io.api.networking.v1",
    "autoscaling": "k8s.io.api.autoscaling.v2",
    "authentication": "k8s.io.api.authentication.v1",
    "authorization": "k8s.io.api.authorization.v1",
}

# (apiVersion, kind) -> top-level message: the kinds of kubectl's generator subcommands.
KINDS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "core.Namespace",
    ("v1", "ConfigMap"): "core.ConfigMap",
    ("v1", "Secret"): "core.Secret",
    ("v1", "ServiceAccount"): "core.ServiceAccount",
    ("v1", "Service"): "core.Service",
    ("v1", "ResourceQuota"): "core.ResourceQuota",
    ("apps/v1", "Deployment"): "apps.Deployment",
    ("batch/v1", "Job"): "batch.Job",
    ("batch/v1", "CronJob"): "batch.CronJob",
    ("rbac.authorization.k8s.io/v1", "Role"): "rbac.Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "rbac.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rbac.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "rbac.ClusterRoleBinding",
    ("scheduling.k8s.io/v1", "PriorityClass"): "scheduling.PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "policy.PodDisruptionBudget",
    ("networking.k8s.io/v1", "Ingress"): "networking.Ingress",
    # kubectl autoscale
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "autoscaling.HorizontalPodAutoscaler",
    # kubectl auth whoami / can-i
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "authentication.SelfSubjectReview",
    # kubectl create token
    ("authentication.k8s.io/v1", "TokenRequest"): "authentication.TokenRequest",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "authorization.SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "authorization.SelfSubjectRulesReview",
}


def proto_name(key: str) -> str:
    """``"core.PodSpec"`` -> ``"k8s.io.api.core.v1.PodSpec"``."""
    prefix, _, rest = key.partition(".")
    return f"{PROTO_PACKAGES[prefix]}.{rest}"
