"""Field tables of the core ``v1`` object messages: Namespace, ConfigMap, Secret, ServiceAccount, Service,
ResourceQuota and what they nest (the pod template tree is ``pods``).

Rows follow the Go struct tags of ``k8s.io/api/core/v1`` (v0.37): ``(number, JSON name, kind[, options])``
in declaration order.
"""

from __future__ import annotations

from apiserver.protobuf.schema import (
    BOOL,
    BYTES,
    INT32,
    INT_OR_STRING,
    KEEP,
    LIST,
    PTR,
    QUANTITY,
    STRING,
    TIME,
    MapOf,
    Table,
    table,
)

MESSAGES: dict[str, Table] = {
    "core.Namespace": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "core.NamespaceSpec"),
        (3, "status", "core.NamespaceStatus"),
    ),
    "core.ConfigMap": table(
        (1, "metadata", "meta.ObjectMeta"),
        (4, "immutable", BOOL, PTR),
        (2, "data", MapOf(STRING, STRING)),
        (3, "binaryData", MapOf(STRING, BYTES)),
    ),
    "core.Secret": table(
        (1, "metadata", "meta.ObjectMeta"),
        (5, "immutable", BOOL, PTR),
        (2, "data", MapOf(STRING, BYTES)),
        (4, "stringData", MapOf(STRING, STRING)),
        (3, "type", STRING),
    ),
    "core.ServiceAccount": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "secrets", "core.ObjectReference", LIST),
        (3, "imagePullSecrets", "core.LocalObjectReference", LIST),
        (4, "automountServiceAccountToken", BOOL, PTR),
    ),
    "core.Service": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "core.ServiceSpec"),
        (3, "status", "core.ServiceStatus"),
    ),
    "core.ResourceQuota": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "core.ResourceQuotaSpec"),
        (3, "status", "core.ResourceQuotaStatus"),
    ),
    "core.NamespaceSpec": table(
        (1, "finalizers", STRING, LIST),
    ),
    "core.NamespaceStatus": table(
        (1, "phase", STRING),
        (2, "conditions", "core.NamespaceCondition", LIST),
    ),
    "core.ObjectReference": table(
        (1, "kind", STRING),
        (2, "namespace", STRING),
        (3, "name", STRING),
        (4, "uid", STRING),
        (5, "apiVersion", STRING),
        (6, "resourceVersion", STRING),
        (7, "fieldPath", STRING),
    ),
    "core.LocalObjectReference": table(
        (1, "name", STRING),
    ),
    "core.ServiceSpec": table(
        (1, "ports", "core.ServicePort", LIST),
        (2, "selector", MapOf(STRING, STRING)),
        (3, "clusterIP", STRING),
        (18, "clusterIPs", STRING, LIST),
        (4, "type", STRING),
        (5, "externalIPs", STRING, LIST),
        (7, "sessionAffinity", STRING),
        (8, "loadBalancerIP", STRING),
        (9, "loadBalancerSourceRanges", STRING, LIST),
        (10, "externalName", STRING),
        (11, "externalTrafficPolicy", STRING),
        (12, "healthCheckNodePort", INT32),
        (13, "publishNotReadyAddresses", BOOL),
        (14, "sessionAffinityConfig", "core.SessionAffinityConfig", PTR),
        (19, "ipFamilies", STRING, LIST),
        (17, "ipFamilyPolicy", STRING, PTR),
        (20, "allocateLoadBalancerNodePorts", BOOL, PTR),
        (21, "loadBalancerClass", STRING, PTR),
        (22, "internalTrafficPolicy", STRING, PTR),
        (23, "trafficDistribution", STRING, PTR),
    ),
    "core.ServiceStatus": table(
        (1, "loadBalancer", "core.LoadBalancerStatus"),
        (2, "conditions", "meta.Condition", LIST),
    ),
    "core.ResourceQuotaSpec": table(
        (1, "hard", MapOf(STRING, QUANTITY)),
        (2, "scopes", STRING, LIST),
        (3, "scopeSelector", "core.ScopeSelector", PTR),
    ),
    "core.ResourceQuotaStatus": table(
        (1, "hard", MapOf(STRING, QUANTITY)),
        (2, "used", MapOf(STRING, QUANTITY)),
    ),
    "core.NamespaceCondition": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
        (4, "lastTransitionTime", TIME),
        (5, "reason", STRING),
        (6, "message", STRING),
    ),
    "core.ServicePort": table(
        (1, "name", STRING),
        (2, "protocol", STRING),
        (6, "appProtocol", STRING, PTR),
        (3, "port", INT32, KEEP),
        (4, "targetPort", INT_OR_STRING),
        (5, "nodePort", INT32),
    ),
    "core.SessionAffinityConfig": table(
        (1, "clientIP", "core.ClientIPConfig", PTR),
    ),
    "core.LoadBalancerStatus": table(
        (1, "ingress", "core.LoadBalancerIngress", LIST),
    ),
    "core.ScopeSelector": table(
        (1, "matchExpressions", "core.ScopedResourceSelectorRequirement", LIST),
    ),
    "core.ClientIPConfig": table(
        (1, "timeoutSeconds", INT32, PTR),
    ),
    "core.LoadBalancerIngress": table(
        (1, "ip", STRING),
        (2, "hostname", STRING),
        (3, "ipMode", STRING, PTR),
        (4, "ports", "core.PortStatus", LIST),
    ),
    "core.ScopedResourceSelectorRequirement": table(
        (1, "scopeName", STRING, KEEP),
        (2, "operator", STRING, KEEP),
        (3, "values", STRING, LIST),
    ),
    "core.PortStatus": table(
        (1, "port", INT32, KEEP),
        (2, "protocol", STRING, KEEP),
        (3, "error", STRING, PTR),
    ),
}
