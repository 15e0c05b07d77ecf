"""Kinds a space stores for the clients that use them, and nothing in the hub acts on: coordination/v1 Leases
(leader election), core/v1 PodTemplates and ReplicationControllers, storage/v1 CSIStorageCapacities.

Defaults and validation follow upstream's ``pkg/apis/{coordination,core,storage}`` for the rules a client can
plausibly trip over.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_dns1123_subdomain, required, validate_labels
from apimachinery.nested import get
from apimachinery.quantity import parse_quantity
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import Obj, child, is_int, nonnegative, set_default, spec_of
from apiserver.builtin.strategies.pods import default_pod_template, validate_pod_template

_ALL_RESTART_POLICIES = ("Always", "OnFailure", "Never")


class LeaseStrategy(BuiltinStrategy):
    """Leases are written by their holders: the server only checks the numbers make sense."""

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        duration = spec.get("leaseDurationSeconds")
        if is_int(duration) and duration <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if is_int(transitions) and transitions < 0:
            causes.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        return causes


class PodTemplateStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        default_pod_template(obj.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_pod_template(obj.get("template"), "template", _ALL_RESTART_POLICIES)


class ReplicationControllerStrategy(BuiltinStrategy):
    """ReplicaSets' predecessor, whose selector is a plain label map."""

    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"replicas": 0}

    def default(self, obj: Obj) -> None:
        # Upstream's SetDefaults_ReplicationController: selector and labels default to the template's labels.
        spec = child(obj, "spec")
        template_labels = get(spec, "template", "metadata", "labels")
        if isinstance(template_labels, dict) and template_labels:
            if not spec.get("selector"):
                spec["selector"] = dict(template_labels)
            meta = child(obj, "metadata")
            if not meta.get("labels"):
                meta["labels"] = dict(template_labels)
        set_default(spec, "replicas", 1)
        default_pod_template(spec.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes = nonnegative(spec, "spec.replicas", "replicas")
        causes += nonnegative(spec, "spec.minReadySeconds", "minReadySeconds")
        selector = spec.get("selector")
        if not selector:
            causes.append(required("spec.selector"))
        else:
            causes += validate_labels(selector, "spec.selector")
        template = spec.get("template")
        if template is None:
            return causes
        labels = get(template, "metadata", "labels")
        labels = labels if isinstance(labels, dict) else {}
        if isinstance(selector, dict) and selector and any(labels.get(k) != v for k, v in selector.items()):
            causes.append(invalid("spec.template.metadata.labels", labels,
                                  "`selector` does not match template `labels`"))
        causes += validate_pod_template(template, "spec.template", ("Always",))
        return causes


class CSIStorageCapacityStrategy(BuiltinStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        class_name = obj.get("storageClassName")
        if not class_name:
            causes.append(required("storageClassName"))
        elif isinstance(class_name, str):
            causes += [invalid("storageClassName", class_name, m) for m in is_dns1123_subdomain(class_name)]
        for key in ("capacity", "maximumVolumeSize"):
            causes += _nonnegative_quantity(obj.get(key), key)
        return causes


def _nonnegative_quantity(value: Any, path: str) -> list[Cause]:
    parsed = parse_quantity(value) if isinstance(value, str) else None
    if value is None or parsed is None:
        return []
    return [invalid(path, value, "must be greater than or equal to 0")] if parsed < 0 else []
