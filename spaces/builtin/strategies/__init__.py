"""Defaults and validation of the built-in kinds: the per-kind half of kube-apiserver's registry strategies.

Each :class:`~spaces.registry.Strategy` here applies what a real server applies to a write of its kind,
so that ``kubectl apply`` round-trips (the defaults it sees on read-back are upstream's) and obviously
invalid input is refused with upstream's field paths and messages:

* defaulting, which upstream runs on every decode (``pkg/apis/*/v1/defaults.go``), runs on every create
  and update here;
* ``status`` is server-owned: a create starts from the kind's initial status and an update keeps the
  stored one (the status subresource handler writes it instead);
* validation follows ``pkg/apis/*/validation`` for the rules a user can plausibly trip over. Object-meta
  rules (names, labels, annotations of ``metadata``) belong to the generic handlers, see
  :mod:`spaces.names`.

The strategies live in one module per API group (:mod:`.core`, :mod:`.services`, :mod:`.apps`,
:mod:`.batch`, :mod:`.networking`, :mod:`.policy`, :mod:`.rbac`, :mod:`.cluster`,
:mod:`.apiextensions`, :mod:`.apiregistration`, :mod:`.spaces`) on top of :mod:`.base`; what several
groups share lives in :mod:`.pods`, :mod:`.labelselectors`, :mod:`.quantities` and :mod:`._helpers`. This
package re-exports every public name, so ``from spaces.builtin import strategies as st`` keeps working.
"""

from __future__ import annotations

from spaces.builtin.strategies._helpers import IMMUTABLE, NEGATIVE, Obj
from spaces.builtin.strategies.apiextensions import CustomResourceDefinitionStrategy
from spaces.builtin.strategies.apiregistration import APIServiceStrategy
from spaces.builtin.strategies.apps import (
    DaemonSetStrategy,
    DeploymentStrategy,
    ReplicaSetStrategy,
    StatefulSetStrategy,
)
from spaces.builtin.strategies.base import BuiltinStrategy
from spaces.builtin.strategies.batch import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    JOB_RESTART_POLICIES,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    CronJobStrategy,
    JobStrategy,
    cron_schedule_error,
)
from spaces.builtin.strategies.cluster import (
    HIGHEST_USER_PRIORITY,
    SYSTEM_PRIORITY_CLASSES,
    PriorityClassStrategy,
    StorageClassStrategy,
)
from spaces.builtin.strategies.core import (
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
from spaces.builtin.strategies.labelselectors import selector_matches, validate_label_selector
from spaces.builtin.strategies.networking import IngressStrategy, NetworkPolicyStrategy
from spaces.builtin.strategies.pods import (
    default_pod_spec,
    default_pod_template,
    validate_pod_spec,
    validate_pod_template,
)
from spaces.builtin.strategies.policy import HorizontalPodAutoscalerStrategy, PodDisruptionBudgetStrategy
from spaces.builtin.strategies.quantities import parse_quantity
from spaces.builtin.strategies.rbac import (
    RBAC_GROUP,
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from spaces.builtin.strategies.services import NODE_PORT_RANGE, SERVICE_CIDR, ServiceStrategy, allocate_cluster_ip
from spaces.builtin.strategies.spaces import ROOT_SPACE, SpaceStrategy

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
    "ROOT_SPACE",
    "SERVICE_CIDR",
    "SYSTEM_PRIORITY_CLASSES",
    "APIServiceStrategy",
    "BuiltinStrategy",
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
    "LimitRangeStrategy",
    "NamespaceStrategy",
    "NetworkPolicyStrategy",
    "Obj",
    "PersistentVolumeClaimStrategy",
    "PodDisruptionBudgetStrategy",
    "PriorityClassStrategy",
    "ReplicaSetStrategy",
    "ResourceQuotaStrategy",
    "RoleBindingStrategy",
    "RoleStrategy",
    "SecretStrategy",
    "ServiceAccountStrategy",
    "ServiceStrategy",
    "SpaceStrategy",
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
