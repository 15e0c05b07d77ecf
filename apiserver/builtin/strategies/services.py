"""core/v1 Services: defaults, validation, and the allocation of cluster IPs and node ports."""

from __future__ import annotations

import copy
import hashlib
import ipaddress
from typing import Any

from apimachinery.errors import Cause
from apimachinery.fieldselectors import NAME_NAMESPACE_FIELDS, SelectableFields, field_at
from apimachinery.names import (
    duplicate,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    required,
    validate_labels,
)
from apimachinery.nested import dicts
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import (
    PORT_PROTOCOLS,
    Obj,
    allocation_seed,
    child,
    is_int,
    normalised,
    set_default,
    spec_of,
)

# Service addressing: the cluster's service CIDR and node-port range, as a default kubeadm cluster has.
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = range(30000, 32768)
# Upstream hands out dynamic addresses above a low band kept for static ones (10.96.0.1, 10.96.0.10 …).
_STATIC_BAND = 256
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _hash(seed: str) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")


def allocate_cluster_ip(seed: str) -> str:
    """A stable address in the service CIDR for ``seed`` (the service's uid)."""
    span = SERVICE_CIDR.num_addresses - _STATIC_BAND - 1  # the broadcast address is never used
    return str(SERVICE_CIDR.network_address + _STATIC_BAND + _hash(seed) % span)


def _allocate_node_port(seed: str, taken: set[int]) -> int:
    start = _hash(seed) % len(NODE_PORT_RANGE)
    for step in range(len(NODE_PORT_RANGE)):
        port = NODE_PORT_RANGE[(start + step) % len(NODE_PORT_RANGE)]
        if port not in taken:
            return port
    raise RuntimeError("node port range exhausted")


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_ports(spec: Obj) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _is_headless(spec: Obj) -> bool:
    return spec.get("clusterIP") == "None"


def _takes_any_family(spec: Obj) -> bool:
    """Headless services without a selector get their endpoints from elsewhere, of either IP family."""
    return _is_headless(spec) and not spec.get("selector")


_IP_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def _port_key(port: Obj, *fields: str) -> tuple[str, ...]:
    """A hashable identity of a service port (user input may hold any JSON in these fields)."""
    return tuple(str(port.get(f)) for f in fields or ("port", "protocol", "nodePort"))


class ServiceStrategy(BuiltinStrategy):
    # Service names become DNS labels of the cluster domain and env-var prefixes: RFC 1035.
    name_rule = "dns1035-label"
    has_status = True
    selectable_fields = SelectableFields({**NAME_NAMESPACE_FIELDS, "spec.clusterIP": field_at("spec", "clusterIP"),
                                          "spec.type": field_at("spec", "type")})

    def initial_status(self, obj: Obj) -> Obj:
        return {"loadBalancer": {}}

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        set_default(spec, "type", "ClusterIP")
        set_default(spec, "sessionAffinity", "None")
        if spec.get("sessionAffinity") == "ClientIP":
            config = child(spec, "sessionAffinityConfig")
            set_default(child(config, "clientIP"), "timeoutSeconds", 10800)
        for port in dicts(spec.get("ports")):
            set_default(port, "protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if _needs_node_ports(spec):
            set_default(spec, "externalTrafficPolicy", "Cluster")
        if spec.get("type") == "LoadBalancer":
            set_default(spec, "allocateLoadBalancerNodePorts", True)
        if _needs_cluster_ip(spec):
            set_default(spec, "internalTrafficPolicy", "Cluster")

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        self._allocate(obj, None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        spec, old_spec = child(new, "spec"), spec_of(old)
        if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
            # clusterIP is immutable; an update that omits it (kubectl replace, a fresh manifest) keeps it.
            for key in _IP_FIELDS:
                if not spec.get(key) and old_spec.get(key):
                    spec[key] = copy.deepcopy(old_spec[key])
        self._drop_type_dependent_fields(spec, old_spec)
        self._allocate(new, old_spec)

    @staticmethod
    def _drop_type_dependent_fields(spec: Obj, old_spec: Obj) -> None:
        """On a type change, forget what the old type allocated, unless the user changed it on purpose."""
        unchanged_ips = all(normalised(spec.get(k)) == normalised(old_spec.get(k))
                            for k in ("clusterIP", "clusterIPs"))
        if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
            for key in _IP_FIELDS if unchanged_ips else ():
                spec.pop(key, None)
            if spec.get("internalTrafficPolicy") == old_spec.get("internalTrafficPolicy"):
                spec.pop("internalTrafficPolicy", None)
        if _needs_node_ports(old_spec) and not _needs_node_ports(spec):
            old_ports = {_port_key(p) for p in dicts(old_spec.get("ports"))}
            for port in dicts(spec.get("ports")):
                if _port_key(port) in old_ports:
                    port.pop("nodePort", None)
            if spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
                spec.pop("externalTrafficPolicy", None)
        if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
            for key in ("allocateLoadBalancerNodePorts", "healthCheckNodePort"):
                if spec.get(key) == old_spec.get(key):
                    spec.pop(key, None)

    def _allocate(self, obj: Obj, old_spec: Obj | None) -> None:
        spec = child(obj, "spec")
        seed = allocation_seed(obj)
        if _needs_cluster_ip(spec):
            self._allocate_ips(spec, seed)
        if _needs_node_ports(spec):
            self._allocate_node_ports(spec, seed, old_spec)

    @staticmethod
    def _allocate_ips(spec: Obj, seed: str) -> None:
        if not spec.get("clusterIP"):
            ips = spec.get("clusterIPs")
            spec["clusterIP"] = ips[0] if isinstance(ips, list) and ips else allocate_cluster_ip(seed)
        if not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        if _takes_any_family(spec):
            set_default(spec, "ipFamilyPolicy", "RequireDualStack")
            dual = spec["ipFamilyPolicy"] != "SingleStack"
            set_default(spec, "ipFamilies", ["IPv4", "IPv6"] if dual else ["IPv4"])
        else:
            set_default(spec, "ipFamilyPolicy", "SingleStack")
            set_default(spec, "ipFamilies", ["IPv4"])

    @staticmethod
    def _allocate_node_ports(spec: Obj, seed: str, old_spec: Obj | None) -> None:
        ports = dicts(spec.get("ports"))
        old_ports = {_port_key(p, "port", "protocol"): p.get("nodePort")
                     for p in dicts((old_spec or {}).get("ports")) if is_int(p.get("nodePort"))}
        taken = {p["nodePort"] for p in ports if is_int(p.get("nodePort"))}
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                continue
            kept = old_ports.get(_port_key(port, "port", "protocol"))
            if not kept or kept in taken:
                kept = _allocate_node_port(f"{seed}:{i}", taken)
            port["nodePort"] = kept
            taken.add(port["nodePort"])
        local = spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
        if local and not spec.get("healthCheckNodePort"):
            kept = (old_spec or {}).get("healthCheckNodePort")
            spec["healthCheckNodePort"] = kept or _allocate_node_port(f"{seed}:health", taken)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        svc_type = spec.get("type")
        if svc_type not in _SERVICE_TYPES:
            causes.append(not_supported("spec.type", svc_type, _SERVICE_TYPES))
        if spec.get("sessionAffinity") not in ("ClientIP", "None"):
            causes.append(not_supported("spec.sessionAffinity", spec.get("sessionAffinity"),
                                        ("ClientIP", "None")))
        if svc_type == "ExternalName":
            external = spec.get("externalName")
            if not external:
                causes.append(required("spec.externalName"))
            else:
                causes += [invalid("spec.externalName", external, m)
                           for m in is_dns1123_subdomain(str(external).removesuffix("."))]
        elif not dicts(spec.get("ports")) and not _is_headless(spec):
            causes.append(required("spec.ports"))
        causes += self._validate_ports(spec)
        causes += self._validate_ips(spec)
        causes += validate_labels(spec.get("selector"), "spec.selector")
        return causes

    @staticmethod
    def _validate_ports(spec: Obj) -> list[Cause]:
        causes: list[Cause] = []
        ports = dicts(spec.get("ports"))
        names: set[str] = set()
        pairs: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            at = f"spec.ports[{i}]"
            name = port.get("name")
            if len(ports) > 1 and not name:
                causes.append(required(f"{at}.name"))
            elif name:
                causes += [invalid(f"{at}.name", name, m) for m in is_dns1123_label(str(name))]
                if str(name) in names:
                    causes.append(duplicate(f"{at}.name", name))
                names.add(str(name))
            causes += [invalid(f"{at}.port", port.get("port"), m)
                       for m in is_valid_port_num(port.get("port"))]
            if port.get("protocol") not in PORT_PROTOCOLS:
                causes.append(not_supported(f"{at}.protocol", port.get("protocol"), PORT_PROTOCOLS))
            target = port.get("targetPort")
            if isinstance(target, str):
                causes += [invalid(f"{at}.targetPort", target, m) for m in is_valid_port_name(target)]
            else:
                causes += [invalid(f"{at}.targetPort", target, m) for m in is_valid_port_num(target)]
            node_port = port.get("nodePort")
            if node_port not in (None, 0):
                if not _needs_node_ports(spec):
                    causes.append(forbidden(f"{at}.nodePort",
                                            f"may not be used when `type` is '{spec.get('type')}'"))
                elif node_port not in NODE_PORT_RANGE:
                    causes.append(invalid(f"{at}.nodePort", node_port,
                                          "provided port is not in the valid range. The range of valid ports "
                                          f"is {NODE_PORT_RANGE.start}-{NODE_PORT_RANGE.stop - 1}"))
            pair = (str(port.get("port")), str(port.get("protocol")))
            if pair in pairs:
                causes.append(duplicate(at, {"port": port.get("port"), "protocol": port.get("protocol")}))
            pairs.add(pair)
        return causes

    @staticmethod
    def _validate_ips(spec: Obj) -> list[Cause]:
        causes: list[Cause] = []
        if not _needs_cluster_ip(spec):
            if spec.get("clusterIP") and spec.get("clusterIP") != "None":
                causes.append(forbidden("spec.clusterIP", "may not be set for ExternalName services"))
            return causes
        ips = spec.get("clusterIPs") if isinstance(spec.get("clusterIPs"), list) else []
        if ips and spec.get("clusterIP") != ips[0]:
            causes.append(invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
        for i, ip in enumerate(ips):
            if ip == "None":
                continue
            try:
                address = ipaddress.ip_address(str(ip))
            except ValueError:
                causes.append(invalid(f"spec.clusterIPs[{i}]", ip,
                                      "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
                continue
            if address not in SERVICE_CIDR:
                causes.append(invalid("spec.clusterIPs", ips,
                                      f"failed to allocate IP {ip}: provided IP ({ip}) is not in the valid "
                                      f"range. The range of valid IPs is {SERVICE_CIDR}"))
        policy = spec.get("ipFamilyPolicy")
        if policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
            causes.append(not_supported("spec.ipFamilyPolicy", policy,
                                        ("PreferDualStack", "RequireDualStack", "SingleStack")))
        elif policy == "RequireDualStack" and not _takes_any_family(spec):
            causes.append(invalid("spec.ipFamilyPolicy", policy,
                                  "this cluster is not configured for dual-stack services"))
        families = spec.get("ipFamilies") if isinstance(spec.get("ipFamilies"), list) else []
        for i, family in enumerate(families):
            if family not in ("IPv4", "IPv6"):
                causes.append(not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
            elif family == "IPv6" and not _takes_any_family(spec):
                causes.append(invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        spec, old_spec = spec_of(new), spec_of(old)
        if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
            new_ips, old_ips = spec.get("clusterIPs") or [], old_spec.get("clusterIPs") or []
            if new_ips and old_ips and new_ips[0] != old_ips[0]:
                causes.append(invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
        return causes
