"""The catalogue of kinds a space serves: the built-in Kubernetes kinds, and the hub's own Space kind.

Each entry is a :class:`~apiserver.resourcetypes.ResourceType` carrying the names kubectl resolves (plural,
singular, short names, categories as upstream's discovery lists them), scope, subresources, the schema
name in :func:`~apiserver.definitions.load_definitions` (or :func:`spacehub_definitions`), the
table columns of :mod:`apiserver.builtin.tables` and the strategy of :mod:`apiserver.builtin.strategies`.
"""

from __future__ import annotations

import dataclasses
import functools

from apiserver.admission.policy import ValidatingAdmissionPolicyBindingStrategy, ValidatingAdmissionPolicyStrategy
from apiserver.admission.webhooks import MutatingWebhookConfigurationStrategy, ValidatingWebhookConfigurationStrategy
from apiserver.builtin import strategies as st
from apiserver.builtin.eventsv1 import EventsV1Conversion, EventsV1Strategy
from apiserver.builtin.hpav1 import HorizontalPodAutoscalerV1Conversion, HorizontalPodAutoscalerV1Strategy, v1_columns
from apiserver.builtin.tables import columns_for
from apiserver.resourcetypes import ALL_VERBS, ResourceType, ScalePaths, Strategy

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
              st.ServiceAccountStrategy(), short_names=("sa",), subresources=("token",),
              returns_deleted_object=True),
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
        # Stored for the clients that use them; nothing in the hub acts on these.
        _kind("coordination.k8s.io", "v1", "Lease", "leases", "io.k8s.api.coordination.v1.Lease",
              st.LeaseStrategy()),
        _kind("", "v1", "PodTemplate", "podtemplates", f"{core}.PodTemplate", st.PodTemplateStrategy()),
        dataclasses.replace(
            _kind("", "v1", "ReplicationController", "replicationcontrollers", f"{core}.ReplicationController",
                  st.ReplicationControllerStrategy(), short_names=("rc",), categories=("all",),
                  subresources=STATUS_AND_SCALE, tracks_generation=True),
            scale=ScalePaths(selector_is_label_map=True)),
        _kind("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities",
              "io.k8s.api.storage.v1.CSIStorageCapacity", st.CSIStorageCapacityStrategy()),
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
        # The same HPAs through the older API, after v2 so that discovery prefers v2 (one storage, as upstream).
        dataclasses.replace(
            _kind("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers",
                  "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", HorizontalPodAutoscalerV1Strategy(),
                  short_names=("hpa",), categories=("all",), subresources=STATUS, tracks_generation=True),
            conversion=HorizontalPodAutoscalerV1Conversion(),
            columns=v1_columns(columns_for("autoscaling", "HorizontalPodAutoscaler"))),
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
        _kind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
              "validatingwebhookconfigurations", f"{admission}.ValidatingWebhookConfiguration",
              ValidatingWebhookConfigurationStrategy(), namespaced=False, categories=("api-extensions",)),
        _kind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
              "mutatingwebhookconfigurations", f"{admission}.MutatingWebhookConfiguration",
              MutatingWebhookConfigurationStrategy(), namespaced=False, categories=("api-extensions",)),
        # Reviews are asked, not stored: POST answers them (apiserver.api.reviews), nothing else is served.
        _kind("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews",
              "io.k8s.api.authentication.v1.SelfSubjectReview", Strategy(), namespaced=False, verbs=("create",)),
        _kind("authentication.k8s.io", "v1", "TokenReview", "tokenreviews",
              "io.k8s.api.authentication.v1.TokenReview", Strategy(), namespaced=False, verbs=("create",)),
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
