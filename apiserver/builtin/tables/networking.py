"""Table columns of networking.k8s.io (Ingress, NetworkPolicy), policy (PDB) and autoscaling (HPA)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apiserver.builtin.tables.columns import (
    Obj,
    age_col,
    at,
    col,
    dict_at,
    field_doc,
    format_selector,
    int_at,
    intstr,
    list_at,
    load_balancer,
    name_col,
    str_at,
)
from apiserver.resourcetypes import Column


def _ingress_hosts(o: Obj) -> str:
    """``formatHosts``: the first three hosts; the count of the rest is of rules, as upstream counts."""
    rules = list_at(o, "spec", "rules")
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
            break
        if str_at(rule, "host"):
            hosts.append(str_at(rule, "host"))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")


def _ingress() -> list[Column]:
    return [
        name_col(),
        col("Class", "string", lambda o: str_at(o, "spec", "ingressClassName") or "<none>",
             "The name of the IngressClass resource that should be used for additional configuration"),
        col("Hosts", "string", _ingress_hosts,
             "Hosts that incoming requests are matched against before the ingress rule"),
        col("Address", "string", lambda o: load_balancer(at(o, "status")),
             "Address is a list containing ingress points for the load-balancer"),
        col("Ports", "string", lambda o: "80, 443" if list_at(o, "spec", "tls") else "80",
             "Ports of TLS configurations that open"),
        age_col(),
    ]


def _network_policy() -> list[Column]:
    return [name_col(),
            col("Pod-Selector", "string", lambda o: format_selector(at(o, "spec", "podSelector")),
                 field_doc("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector")),
            age_col()]


def _pdb() -> list[Column]:
    def bound(field: str) -> Callable[[Obj], str]:
        return lambda o: intstr(at(o, "spec", field)) or "N/A"

    return [
        name_col(),
        col("Min Available", "string", bound("minAvailable"),
             "The minimum number of pods that must be available."),
        col("Max Unavailable", "string", bound("maxUnavailable"),
             "The maximum number of pods that may be unavailable."),
        col("Allowed Disruptions", "integer", lambda o: int_at(o, "status", "disruptionsAllowed"),
             "Calculated number of pods that may be disrupted at this time."),
        age_col(),
    ]


def _metric_target(spec: Any, status: Any, source: str, with_name: bool) -> str:
    target = dict_at(spec, source, "target")
    current = dict_at(status, source, "current") if isinstance(at(status, source), dict) else None
    prefix = f"{str_at(spec, source, 'name')}: " if with_name else ""
    if "averageValue" in target:
        shown = intstr(current.get("averageValue")) if current and "averageValue" in current else "<unknown>"
        suffix = "" if with_name or source == "pods" else " (avg)"
        return f"{prefix}{shown}/{intstr(target['averageValue'])}{suffix}"
    if with_name:
        utilization = current.get("averageUtilization") if current else None
        shown = f"{utilization}%" if isinstance(utilization, int) else "<unknown>"
        wanted = target.get("averageUtilization")
        return f"{prefix}{shown}/{wanted}%" if isinstance(wanted, int) else f"{prefix}{shown}/<auto>"
    shown = intstr(current.get("value")) if current and "value" in current else "<unknown>"
    return f"{shown}/{intstr(target.get('value'))}"


def _hpa_targets(o: Obj) -> str:
    specs, statuses = list_at(o, "spec", "metrics"), list_at(o, "status", "currentMetrics")
    if not specs:
        return "<none>"
    sources = {"External": ("external", False), "Pods": ("pods", False), "Object": ("object", False),
               "Resource": ("resource", True), "ContainerResource": ("containerResource", True)}
    rendered = []
    for i, spec in enumerate(specs):
        status = statuses[i] if i < len(statuses) else None
        known = sources.get(str_at(spec, "type"))
        rendered.append(_metric_target(spec, status, *known) if known else "<unknown type>")
    if len(rendered) > 2:
        return ", ".join(rendered[:2]) + f" + {len(rendered) - 2} more..."
    return ", ".join(rendered)


def _hpa() -> list[Column]:
    spec_doc = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"

    def reference(o: Obj) -> str:
        return f"{str_at(o, 'spec', 'scaleTargetRef', 'kind')}/{str_at(o, 'spec', 'scaleTargetRef', 'name')}"

    def min_pods(o: Obj) -> str:
        value = at(o, "spec", "minReplicas")
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else "<unset>"

    return [
        name_col(),
        col("Reference", "string", reference, field_doc(spec_doc, "scaleTargetRef")),
        col("Targets", "string", _hpa_targets, field_doc(spec_doc, "metrics")),
        col("MinPods", "string", min_pods, field_doc(spec_doc, "minReplicas")),
        col("MaxPods", "string", lambda o: int_at(o, "spec", "maxReplicas"), field_doc(spec_doc, "maxReplicas")),
        col("Replicas", "string", lambda o: int_at(o, "status", "currentReplicas"),
             field_doc("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas")),
        age_col(),
    ]


# The kinds of this module and the columns each shows.
BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("networking.k8s.io", "Ingress"): _ingress,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
}
