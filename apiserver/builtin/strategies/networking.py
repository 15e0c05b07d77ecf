"""networking.k8s.io/v1: Ingresses and NetworkPolicies."""

from __future__ import annotations

import ipaddress
from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import (
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    regex_error,
    required,
)
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.labelselectors import validate_label_selector
from apiserver.builtin.strategies.objectfields import PORT_PROTOCOLS, Obj, child, is_int, set_default, spec_of

_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _validate_backend(backend: Any, path: str) -> list[Cause]:
    if not isinstance(backend, dict):
        return [required(path)]
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, backend, "cannot set both service and resource backends")]
    if service is None and resource is None:
        return [invalid(path, backend, "one backend (service or resource) must be specified")]
    if resource is not None:
        causes = []
        for key in ("kind", "name"):
            if not get(resource, key):
                causes.append(required(f"{path}.resource.{key}"))
        return causes
    causes = []
    name = get(service, "name")
    if not name:
        causes.append(required(f"{path}.service.name"))
    else:
        causes += [invalid(f"{path}.service.name", name, m) for m in is_dns1035_label(str(name))]
    port = get(service, "port") or {}
    has_name, has_number = bool(port.get("name")), port.get("number") not in (None, 0)
    if has_name and has_number:
        causes.append(invalid(f"{path}.service.port", port, "cannot set both port name & port number"))
    elif has_name:
        causes += [invalid(f"{path}.service.port.name", port["name"], m)
                   for m in is_valid_port_name(str(port["name"]))]
    elif has_number:
        causes += [invalid(f"{path}.service.port.number", port["number"], m)
                   for m in is_valid_port_num(port["number"])]
    else:
        causes.append(required(f"{path}.service.port", "port name or number is required"))
    return causes


_WILDCARD_HOST_ERROR = regex_error(
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
    "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", "*.example.com")


def _validate_host(host: str, path: str) -> list[Cause]:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [invalid(path, host, "must be a DNS name, not an IP address")]
    if host.startswith("*."):
        if is_dns1123_subdomain(host[2:]):
            return [invalid(path, host, _WILDCARD_HOST_ERROR)]
        return []
    return [invalid(path, host, m) for m in is_dns1123_subdomain(host)]


class IngressStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"loadBalancer": {}}

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        rules = dicts(spec.get("rules"))
        if spec.get("defaultBackend") is None and not rules:
            causes.append(invalid("spec", spec.get("rules"),
                                  "either `defaultBackend` or `rules` must be specified"))
        if spec.get("defaultBackend") is not None:
            causes += _validate_backend(spec["defaultBackend"], "spec.defaultBackend")
        class_name = spec.get("ingressClassName")
        if class_name is not None:
            causes += [invalid("spec.ingressClassName", class_name, m)
                       for m in is_dns1123_subdomain(str(class_name))]
        for i, rule in enumerate(rules):
            at = f"spec.rules[{i}]"
            if rule.get("host"):
                causes += _validate_host(str(rule["host"]), f"{at}.host")
            http = rule.get("http")
            if http is None:
                continue
            paths = dicts(get(http, "paths"))
            if not paths:
                causes.append(required(f"{at}.http.paths"))
            for j, item in enumerate(paths):
                pat = f"{at}.http.paths[{j}]"
                path_type, value = item.get("pathType"), item.get("path")
                if path_type is None:
                    causes.append(required(f"{pat}.pathType", "pathType must be specified"))
                elif path_type not in _PATH_TYPES:
                    causes.append(not_supported(f"{pat}.pathType", path_type, _PATH_TYPES))
                elif path_type in ("Exact", "Prefix") and not str(value or "").startswith("/"):
                    causes.append(invalid(f"{pat}.path", value or "", "must be an absolute path"))
                causes += _validate_backend(item.get("backend"), f"{pat}.backend")
        for i, tls in enumerate(dicts(spec.get("tls"))):
            for j, host in enumerate(tls.get("hosts") or []):
                causes += _validate_host(str(host), f"spec.tls[{i}].hosts[{j}]")
        return causes


def _validate_peer(peer: Obj, path: str) -> list[Cause]:
    selectors = [k for k in ("podSelector", "namespaceSelector") if peer.get(k) is not None]
    block = peer.get("ipBlock")
    if not selectors and block is None:
        return [required(path, "must specify a peer")]
    if selectors and block is not None:
        return [forbidden(path, "may not specify more than 1 peer type")]
    causes: list[Cause] = []
    for key in selectors:
        causes += validate_label_selector(peer[key], f"{path}.{key}")
    if isinstance(block, dict):
        cidr = block.get("cidr")
        if not cidr:
            causes.append(required(f"{path}.ipBlock.cidr"))
            return causes
        try:
            network = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            causes.append(invalid(f"{path}.ipBlock.cidr", cidr,
                                  "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
            return causes
        for k, excepted in enumerate(block.get("except") or []):
            try:
                inner = ipaddress.ip_network(str(excepted), strict=False)
            except ValueError:
                causes.append(invalid(f"{path}.ipBlock.except[{k}]", excepted,
                                      "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
                continue
            if inner.version != network.version or inner == network or not inner.subnet_of(network):
                causes.append(invalid(f"{path}.ipBlock.except[{k}]", excepted,
                                      "must be a strict subset of `cidr`"))
    return causes


def _validate_policy_ports(ports: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, port in enumerate(dicts(ports)):
        at = f"{path}[{i}]"
        if port.get("protocol") not in PORT_PROTOCOLS:
            causes.append(not_supported(f"{at}.protocol", port.get("protocol"), PORT_PROTOCOLS))
        value = port.get("port")
        if isinstance(value, str):
            causes += [invalid(f"{at}.port", value, m) for m in is_valid_port_name(value)]
        elif value is not None:
            causes += [invalid(f"{at}.port", value, m) for m in is_valid_port_num(value)]
        end = port.get("endPort")
        if end is not None:
            if not is_int(value):
                causes.append(required(f"{at}.port", "must be specified when endPort is specified"))
            elif not is_int(end) or end < value:
                causes.append(invalid(f"{at}.endPort", end, "must be greater than or equal to `port`"))
    return causes


class NetworkPolicyStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        if not spec.get("policyTypes"):
            # A policy that names no types is at least an ingress policy, and an egress one if it has rules.
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
        for direction in ("ingress", "egress"):
            for rule in dicts(spec.get(direction)):
                for port in dicts(rule.get("ports")):
                    set_default(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes = validate_label_selector(spec.get("podSelector"), "spec.podSelector")
        for direction, peers_key in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(dicts(spec.get(direction))):
                at = f"spec.{direction}[{i}]"
                causes += _validate_policy_ports(rule.get("ports"), f"{at}.ports")
                for j, peer in enumerate(dicts(rule.get(peers_key))):
                    causes += _validate_peer(peer, f"{at}.{peers_key}[{j}]")
        types = spec.get("policyTypes") if isinstance(spec.get("policyTypes"), list) else []
        for i, policy_type in enumerate(types):
            if policy_type not in ("Egress", "Ingress"):
                causes.append(not_supported(f"spec.policyTypes[{i}]", policy_type, ("Egress", "Ingress")))
        if len(types) > 2:
            causes.append(invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
        return causes
