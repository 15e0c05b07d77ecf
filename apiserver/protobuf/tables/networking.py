"""Field tables of the ``networking.k8s.io/v1`` Ingress messages (``k8s.io/api/networking/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import INLINE, INT32, KEEP, LIST, PTR, STRING, Table, table

MESSAGES: dict[str, Table] = {
    "networking.Ingress": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "networking.IngressSpec"),
        (3, "status", "networking.IngressStatus"),
    ),
    "networking.IngressSpec": table(
        (4, "ingressClassName", STRING, PTR),
        (1, "defaultBackend", "networking.IngressBackend", PTR),
        (2, "tls", "networking.IngressTLS", LIST),
        (3, "rules", "networking.IngressRule", LIST),
    ),
    "networking.IngressStatus": table(
        (1, "loadBalancer", "networking.IngressLoadBalancerStatus"),
    ),
    "networking.IngressBackend": table(
        (4, "service", "networking.IngressServiceBackend", PTR),
        (3, "resource", "core.TypedLocalObjectReference", PTR),
    ),
    "networking.IngressTLS": table(
        (1, "hosts", STRING, LIST),
        (2, "secretName", STRING),
    ),
    "networking.IngressRule": table(
        (1, "host", STRING),
        (2, "", "networking.IngressRuleValue", INLINE),
    ),
    "networking.IngressLoadBalancerStatus": table(
        (1, "ingress", "networking.IngressLoadBalancerIngress", LIST),
    ),
    "networking.IngressServiceBackend": table(
        (1, "name", STRING, KEEP),
        (2, "port", "networking.ServiceBackendPort"),
    ),
    "networking.IngressRuleValue": table(
        (1, "http", "networking.HTTPIngressRuleValue", PTR),
    ),
    "networking.IngressLoadBalancerIngress": table(
        (1, "ip", STRING),
        (2, "hostname", STRING),
        (4, "ports", "networking.IngressPortStatus", LIST),
    ),
    "networking.ServiceBackendPort": table(
        (1, "name", STRING),
        (2, "number", INT32),
    ),
    "networking.HTTPIngressRuleValue": table(
        (1, "paths", "networking.HTTPIngressPath", LIST | KEEP),
    ),
    "networking.IngressPortStatus": table(
        (1, "port", INT32, KEEP),
        (2, "protocol", STRING, KEEP),
        (3, "error", STRING, PTR),
    ),
    "networking.HTTPIngressPath": table(
        (1, "path", STRING),
        (3, "pathType", STRING, PTR | KEEP),
        (2, "backend", "networking.IngressBackend", KEEP),
    ),
}
