"""apiregistration.k8s.io/v1 APIServices, stored as plain objects.

A space describes workloads; it does not aggregate API servers. An APIService in a space is stored,
validated and defaulted as kube-aggregator does (``pkg/apis/apiregistration/validation``), so that it can be
placed on clusters whose own aggregator serves it. Nothing in a space sets its ``Available`` condition.
"""

from __future__ import annotations

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_dns1035_label, is_dns1123_subdomain, is_valid_port_num, required
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import Obj, child, is_int, name_of, set_default

DEFAULT_SERVICE_PORT = 443


class APIServiceStrategy(BuiltinStrategy):
    name_rule = "path-segment"
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        service = spec.get("service") if isinstance(spec, dict) else None
        if isinstance(service, dict):
            set_default(service, "port", DEFAULT_SERVICE_PORT)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = child(obj, "spec")
        group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
        causes: list[Cause] = []
        name, wanted = name_of(obj), f"{version}.{group}"
        if name and name != wanted:
            causes.append(invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{wanted}"'))
        if not group and version != "v1":
            causes.append(required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
        if group:
            causes += [invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
        causes += [invalid("spec.version", version, m) for m in is_dns1035_label(version)]
        for key, high in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
            value = spec.get(key)
            number = value if is_int(value) else 0
            if not 0 < number <= high:
                causes.append(invalid(f"spec.{key}", number, f"must be positive and less than {high}"))
        ca_bundle = spec.get("caBundle")
        skip_verify = spec.get("insecureSkipTLSVerify") is True
        service = spec.get("service")
        if not isinstance(service, dict):
            if ca_bundle:
                causes.append(invalid("spec.caBundle", f"{len(str(ca_bundle))} bytes",
                                      "local APIServices may not have a caBundle"))
            if skip_verify:
                causes.append(invalid("spec.insecureSkipTLSVerify", True,
                                      "local APIServices may not have insecureSkipTLSVerify"))
            return causes
        if not service.get("namespace"):
            causes.append(required("spec.service.namespace"))
        if not service.get("name"):
            causes.append(required("spec.service.name"))
        port = service.get("port")
        causes += [invalid("spec.service.port", port, m) for m in is_valid_port_num(port)]
        if skip_verify and ca_bundle:
            causes.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new)
