"""The catalogue of kinds a space serves: the built-in Kubernetes kinds, and the hub's own Space kind.

Each entry is a :class:`~spaces.registry.ResourceType` carrying the names kubectl resolves (plural,
singular, short names, categories as upstream's discovery lists them), scope, subresources, the schema
name in :func:`~spaces.definitions.load_definitions` (or :func:`spacehub_definitions`), the
table columns of :mod:`spaces.builtin.tables` and the strategy of :mod:`spaces.builtin.strategies`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from spaces.admission.policy import ValidatingAdmissionPolicyBindingStrategy, ValidatingAdmissionPolicyStrategy
from spaces.builtin import strategies as st
from spaces.builtin.eventsv1 import EventsV1Conversion, EventsV1Strategy
from spaces.builtin.tables import columns_for
from spaces.registry import ALL_VERBS, ResourceType, Strategy

_META_REF = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META_REF = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"

SPACE_GROUP = "spacehub.io"
SPACE_VERSION = "v1alpha1"
SPACE_SCHEMA = "io.spacehub.v1alpha1.Space"

STATUS = ("status",)
STATUS_AND_SCALE = ("status", "scale")


def _kind(group: str, version: str, kind: str, plural: str, schema: str, strategy: Strategy, *,
          namespaced: bool = True, short_names: tuple[str, ...] = (), categories: tuple[str, ...] = (),
          subresources: tuple[str, ...] = (), strategic_merge: bool = True,
          tracks_generation: bool = False, returns_deleted_object: bool = False,
          verbs: tuple[str, ...] = ALL_VERBS) -> ResourceType:
    return ResourceType(
        group=group, version=version, kind=kind, plural=plural, singular=kind.lower(), namespaced=namespaced,
        short_names=short_names, categories=categories, subresources=subresources, schema_name=schema,
        strategic_merge=strategic_merge, columns=columns_for(group, kind), strategy=strategy,
        tracks_generation=tracks_generation, returns_deleted_object=returns_deleted_object, verbs=verbs,
    )


@functools.cache
def builtin_types() -> tuple[ResourceType, ...]:
    """The Kubernetes kinds every space serves, at the versions kubectl 1.37 prefers."""
    core, apps, batch = "io.k8s.api.core.v1", "io.k8s.api.apps.v1", "io.k8s.api.batch.v1"
    rbac = "io.k8s.api.rbac.v1"
    crd = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    rbac_group = "rbac.authorization.k8s.io"
    admission = "io.k8s.api.admissionregistration.v1"
    return (
        _kind("", "v1", "Namespace", "namespaces", f"{core}.Namespace", st.NamespaceStrategy(),
              namespaced=False, short_names=("ns",), subresources=STATUS),
        _kind("", "v1", "ConfigMap", "configmaps", f"{core}.ConfigMap", st.ConfigMapStrategy(),
              short_names=("cm",)),
        _kind("", "v1", "Secret", "secrets", f"{core}.Secret", st.SecretStrategy()),
        _kind("", "v1", "ServiceAccount", "serviceaccounts", f"{core}.ServiceAccount",
              st.ServiceAccountStrategy(), short_names=("sa",), returns_deleted_object=True),
        _kind("", "v1", "Service", "services", f"{core}.Service", st.ServiceStrategy(),
              short_names=("svc",), categories=("all",), subresources=STATUS, returns_deleted_object=True),
        _kind("", "v1", "Event", "events", f"{core}.Event", st.EventStrategy(), short_names=("ev",)),
        # The same Events through the newer API (kube-apiserver serves both from one storage).
        dataclasses.replace(_kind("events.k8s.io", "v1", "Event", "events", "io.k8s.api.events.v1.Event",
                                  EventsV1Strategy(), short_names=("ev",)), conversion=EventsV1Conversion()),
        _kind("", "v1", "LimitRange", "limitranges", f"{core}.LimitRange", st.LimitRangeStrategy(),
              short_names=("limits",)),
        _kind("", "v1", "ResourceQuota", "resourcequotas", f"{core}.ResourceQuota", st.ResourceQuotaStrategy(),
              short_names=("quota",), subresources=STATUS),
        _kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", f"{core}.PersistentVolumeClaim",
              st.PersistentVolumeClaimStrategy(), short_names=("pvc",), subresources=STATUS),
        _kind("apps", "v1", "Deployment", "deployments", f"{apps}.Deployment", st.DeploymentStrategy(),
              short_names=("deploy",), categories=("all",), subresources=STATUS_AND_SCALE,
              tracks_generation=True),
        _kind("apps", "v1", "ReplicaSet", "replicasets", f"{apps}.ReplicaSet", st.ReplicaSetStrategy(),
              short_names=("rs",), categories=("all",), subresources=STATUS_AND_SCALE,
              tracks_generation=True),
        _kind("apps", "v1", "StatefulSet", "statefulsets", f"{apps}.StatefulSet", st.StatefulSetStrategy(),
              short_names=("sts",), categories=("all",), subresources=STATUS_AND_SCALE,
              tracks_generation=True),
        _kind("apps", "v1", "DaemonSet", "daemonsets", f"{apps}.DaemonSet", st.DaemonSetStrategy(),
              short_names=("ds",), categories=("all",), subresources=STATUS, tracks_generation=True),
        _kind("batch", "v1", "Job", "jobs", f"{batch}.Job", st.JobStrategy(),
              categories=("all",), subresources=STATUS, tracks_generation=True),
        _kind("batch", "v1", "CronJob", "cronjobs", f"{batch}.CronJob", st.CronJobStrategy(),
              short_names=("cj",), categories=("all",), subresources=STATUS, tracks_generation=True),
        _kind("networking.k8s.io", "v1", "Ingress", "ingresses", "io.k8s.api.networking.v1.Ingress",
              st.IngressStrategy(), short_names=("ing",), subresources=STATUS, tracks_generation=True),
        _kind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies",
              "io.k8s.api.networking.v1.NetworkPolicy", st.NetworkPolicyStrategy(), short_names=("netpol",),
              tracks_generation=True),
        _kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
              "io.k8s.api.policy.v1.PodDisruptionBudget", st.PodDisruptionBudgetStrategy(),
              short_names=("pdb",), subresources=STATUS, tracks_generation=True),
        _kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers",
              "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", st.HorizontalPodAutoscalerStrategy(),
              short_names=("hpa",), categories=("all",), subresources=STATUS, tracks_generation=True),
        _kind(rbac_group, "v1", "Role", "roles", f"{rbac}.Role", st.RoleStrategy()),
        _kind(rbac_group, "v1", "RoleBinding", "rolebindings", f"{rbac}.RoleBinding",
              st.RoleBindingStrategy()),
        _kind(rbac_group, "v1", "ClusterRole", "clusterroles", f"{rbac}.ClusterRole", st.ClusterRoleStrategy(),
              namespaced=False),
        _kind(rbac_group, "v1", "ClusterRoleBinding", "clusterrolebindings", f"{rbac}.ClusterRoleBinding",
              st.ClusterRoleBindingStrategy(), namespaced=False),
        _kind("storage.k8s.io", "v1", "StorageClass", "storageclasses", "io.k8s.api.storage.v1.StorageClass",
              st.StorageClassStrategy(), namespaced=False, short_names=("sc",), returns_deleted_object=True),
        # Upstream sets generation 1 on create and never bumps it; value and policy are immutable anyway.
        _kind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses",
              "io.k8s.api.scheduling.v1.PriorityClass", st.PriorityClassStrategy(), namespaced=False,
              short_names=("pc",), tracks_generation=True),
        _kind("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
              f"{admission}.ValidatingAdmissionPolicy", ValidatingAdmissionPolicyStrategy(), namespaced=False,
              categories=("api-extensions",), subresources=STATUS, tracks_generation=True),
        _kind("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
              "validatingadmissionpolicybindings", f"{admission}.ValidatingAdmissionPolicyBinding",
              ValidatingAdmissionPolicyBindingStrategy(), namespaced=False, categories=("api-extensions",),
              tracks_generation=True),
        # Reviews are asked, not stored: POST answers them (spaces.api.reviews), nothing else is served.
        _kind("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews",
              "io.k8s.api.authentication.v1.SelfSubjectReview", Strategy(), namespaced=False, verbs=("create",)),
        _kind("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
              "io.k8s.api.authorization.v1.SelfSubjectAccessReview", Strategy(), namespaced=False, verbs=("create",)),
        _kind("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
              "io.k8s.api.authorization.v1.SelfSubjectRulesReview", Strategy(), namespaced=False, verbs=("create",)),
        # Stored for placement on clusters that aggregate it; nothing in a space serves its group.
        _kind("apiregistration.k8s.io", "v1", "APIService", "apiservices",
              "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", st.APIServiceStrategy(),
              namespaced=False, categories=("api-extensions",), subresources=STATUS),
        # apiextensions-apiserver serves CRDs without strategic merge patch: kubectl falls back to merge.
        _kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", crd,
              st.CustomResourceDefinitionStrategy(), namespaced=False, short_names=("crd", "crds"),
              categories=("api-extensions",), subresources=STATUS, strategic_merge=False,
              tracks_generation=True),
    )


@functools.cache
def root_types() -> tuple[ResourceType, ...]:
    """Kinds served only in the ``root`` space: the spaces themselves."""
    return (
        ResourceType(
            group=SPACE_GROUP, version=SPACE_VERSION, kind="Space", plural="spaces", singular="space",
            namespaced=False, short_names=("sp",), subresources=STATUS, schema_name=SPACE_SCHEMA,
            # Spaces are the hub's own kind: like any custom resource, no strategic merge patch.
            strategic_merge=False, columns=columns_for(SPACE_GROUP, "Space"), strategy=st.SpaceStrategy(),
            tracks_generation=True,
        ),
    )


def _type_meta(api_version: str, kind: str) -> dict[str, Any]:
    """apiVersion and kind properties shaped like the upstream definitions' (nullable, single-valued)."""
    return {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation of an object.",
            "type": ["string", "null"], "enum": [api_version],
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource this object represents.",
            "type": ["string", "null"], "enum": [kind],
        },
    }


def spacehub_definitions() -> dict[str, dict[str, Any]]:
    """Schemas of the hub's own kinds, in the form of :func:`~spaces.definitions.load_definitions`."""
    api_version = f"{SPACE_GROUP}/{SPACE_VERSION}"
    return {
        SPACE_SCHEMA: {
            "description": "Space is an isolated Kubernetes API served by the hub, with its own objects.",
            "type": ["object", "null"],
            "properties": {
                **_type_meta(api_version, "Space"),
                "metadata": {"$ref": _META_REF, "description": "Standard object's metadata."},
                "spec": {
                    "description": "Spec of the space: who serves its API.",
                    "type": ["object", "null"],
                    "properties": {
                        "provider": {
                            "description": "Who serves the space's API: builtin (the hub's own store, the default) "
                                           "or kube (a Kubernetes API server reached through a kubeconfig). Immutable.",
                            "type": ["string", "null"], "enum": ["builtin", "kube", None]},
                        "kubeconfigSecretRef": {
                            "description": "With provider kube: the Secret in the parent space whose data key holds "
                                           "the kubeconfig of the API server.",
                            "type": ["object", "null"],
                            "properties": {
                                "namespace": {"description": "Namespace of the Secret.", "type": ["string", "null"]},
                                "name": {"description": "Name of the Secret.", "type": ["string", "null"]},
                                "key": {"description": "Data key holding the kubeconfig.",
                                        "type": ["string", "null"]},
                            },
                        },
                    },
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "status": {
                    "$ref": f"#/$defs/{SPACE_SCHEMA}Status",
                    "description": "Most recently observed status of the space, written by the hub.",
                },
            },
            "x-kubernetes-group-version-kind": [{"group": SPACE_GROUP, "kind": "Space",
                                                 "version": SPACE_VERSION}],
        },
        f"{SPACE_SCHEMA}Status": {
            "description": "SpaceStatus is the observed state of a space.",
            "type": ["object", "null"],
            "properties": {
                "phase": {"description": "Lifecycle phase of the space, as the hub last observed it.",
                          "type": ["string", "null"]},
                "url": {"description": "URL at which the space serves its Kubernetes API.",
                        "type": ["string", "null"]},
                "conditions": {
                    "description": "Observations of the space; a kube space's ProviderReachable says whether the "
                                   "hub reaches its API server.",
                    "type": ["array", "null"],
                    "items": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.Condition"},
                },
            },
        },
        f"{SPACE_SCHEMA}List": {
            "description": "SpaceList is a list of spaces.",
            "type": ["object", "null"],
            "required": ["items"],
            "properties": {
                **_type_meta(api_version, "SpaceList"),
                "items": {"description": "Items is the list of spaces.", "type": "array",
                          "items": {"$ref": f"#/$defs/{SPACE_SCHEMA}"}},
                "metadata": {"$ref": _LIST_META_REF, "description": "Standard list metadata."},
            },
            "x-kubernetes-group-version-kind": [{"group": SPACE_GROUP, "kind": "SpaceList",
                                                 "version": SPACE_VERSION}],
        },
    }
