"""Defaults and validation of the built-in kinds: the per-kind half of kube-apiserver's registry strategies.

Each :class:`~apiserver.resourcetypes.Strategy` here applies what a real server applies to a write of its kind,
so that ``kubectl apply`` round-trips (the defaults it sees on read-back are upstream's) and obviously
invalid input is refused with upstream's field paths and messages:

* defaulting, which upstream runs on every decode (``pkg/apis/*/v1/defaults.go``), runs on every create
  and update here;
* ``status`` is server-owned: a create starts from the kind's initial status and an update keeps the
  stored one (the status subresource handler writes it instead);
* validation follows ``pkg/apis/*/validation`` for the rules a user can plausibly trip over. Object-meta
  rules (names, labels, annotations of ``metadata``) belong to the generic handlers, see
  :mod:`apimachinery.names`.

The strategies live in one module per API group (:mod:`.core`, :mod:`.services`, :mod:`.apps`,
:mod:`.batch`, :mod:`.networking`, :mod:`.policy`, :mod:`.rbac`, :mod:`.cluster`,
:mod:`.apiextensions`, :mod:`.apiregistration`, :mod:`.storedonly`) on top of :mod:`.base`; what several
groups share lives in :mod:`.pods`, :mod:`.labelselectors`, :mod:`.quantities` and :mod:`.objectfields`. This
package re-exports every public name, so ``from apiserver.builtin import strategies as st`` keeps working.
"""

from __future__ import annotations

from apiserver.builtin.strategies.apiextensions import CustomResourceDefinitionStrategy
from apiserver.builtin.strategies.apiregistration import APIServiceStrategy
from apiserver.builtin.strategies.apps import (
    DaemonSetStrategy,
    DeploymentStrategy,
    ReplicaSetStrategy,
    StatefulSetStrategy,
)
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.batch import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    JOB_RESTART_POLICIES,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    CronJobStrategy,
    JobStrategy,
    cron_schedule_error,
)
from apiserver.builtin.strategies.cluster import (
    HIGHEST_USER_PRIORITY,
    SYSTEM_PRIORITY_CLASSES,
    PriorityClassStrategy,
    StorageClassStrategy,
)
from apiserver.builtin.strategies.core import (
    MAX_DATA_SIZE,
    NAMESPACE_NAME_LABEL,
    ConfigMapStrategy,
    EventStrategy,
    LimitRangeStrategy,
    NamespaceStrategy,
    PersistentVolumeClaimStrategy,
    ResourceQuotaStrategy,
    SecretStrategy,
    ServiceAccountStrategy,
)
from apiserver.builtin.strategies.labelselectors import selector_matches, validate_label_selector
from apiserver.builtin.strategies.networking import IngressStrategy, NetworkPolicyStrategy
from apiserver.builtin.strategies.objectfields import IMMUTABLE, NEGATIVE, Obj
from apiserver.builtin.strategies.pods import (
    default_pod_spec,
    default_pod_template,
    validate_pod_spec,
    validate_pod_template,
)
from apiserver.builtin.strategies.policy import HorizontalPodAutoscalerStrategy, PodDisruptionBudgetStrategy
from apiserver.builtin.strategies.quantities import parse_quantity
from apiserver.builtin.strategies.rbac import (
    RBAC_GROUP,
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from apiserver.builtin.strategies.services import NODE_PORT_RANGE, SERVICE_CIDR, ServiceStrategy, allocate_cluster_ip
from apiserver.builtin.strategies.storedonly import (
    CSIStorageCapacityStrategy,
    LeaseStrategy,
    PodTemplateStrategy,
    ReplicationControllerStrategy,
)

__all__ = [
    "CONTROLLER_UID_LABEL",
    "HIGHEST_USER_PRIORITY",
    "IMMUTABLE",
    "JOB_NAME_LABEL",
    "JOB_RESTART_POLICIES",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "MAX_DATA_SIZE",
    "NAMESPACE_NAME_LABEL",
    "NEGATIVE",
    "NODE_PORT_RANGE",
    "RBAC_GROUP",
    "SERVICE_CIDR",
    "SYSTEM_PRIORITY_CLASSES",
    "APIServiceStrategy",
    "BuiltinStrategy",
    "CSIStorageCapacityStrategy",
    "ClusterRoleBindingStrategy",
    "ClusterRoleStrategy",
    "ConfigMapStrategy",
    "CronJobStrategy",
    "CustomResourceDefinitionStrategy",
    "DaemonSetStrategy",
    "DeploymentStrategy",
    "EventStrategy",
    "HorizontalPodAutoscalerStrategy",
    "IngressStrategy",
    "JobStrategy",
    "LeaseStrategy",
    "LimitRangeStrategy",
    "NamespaceStrategy",
    "NetworkPolicyStrategy",
    "Obj",
    "PersistentVolumeClaimStrategy",
    "PodDisruptionBudgetStrategy",
    "PodTemplateStrategy",
    "PriorityClassStrategy",
    "ReplicaSetStrategy",
    "ReplicationControllerStrategy",
    "ResourceQuotaStrategy",
    "RoleBindingStrategy",
    "RoleStrategy",
    "SecretStrategy",
    "ServiceAccountStrategy",
    "ServiceStrategy",
    "StatefulSetStrategy",
    "StorageClassStrategy",
    "allocate_cluster_ip",
    "cron_schedule_error",
    "default_pod_spec",
    "default_pod_template",
    "parse_quantity",
    "selector_matches",
    "validate_label_selector",
    "validate_pod_spec",
    "validate_pod_template",
]
