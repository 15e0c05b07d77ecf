"""Cluster-scoped configuration kinds: storage.k8s.io/v1 StorageClasses and scheduling.k8s.io/v1
PriorityClasses.
"""

from __future__ import annotations

from apimachinery.errors import Cause
from apimachinery.names import forbidden, invalid, is_qualified_name, not_supported, required
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import Obj, immutable, is_int, name_of, normalised, set_default


class StorageClassStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        set_default(obj, "reclaimPolicy", "Delete")
        set_default(obj, "volumeBindingMode", "Immediate")

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        provisioner = obj.get("provisioner")
        if not provisioner:
            causes.append(required("provisioner"))
        else:
            causes += [invalid("provisioner", provisioner, m)
                       for m in is_qualified_name(str(provisioner).lower())]
        if obj.get("reclaimPolicy") not in ("Delete", "Retain"):
            causes.append(not_supported("reclaimPolicy", obj.get("reclaimPolicy"), ("Delete", "Retain")))
        if obj.get("volumeBindingMode") not in ("Immediate", "WaitForFirstConsumer"):
            causes.append(not_supported("volumeBindingMode", obj.get("volumeBindingMode"),
                                        ("Immediate", "WaitForFirstConsumer")))
        parameters = obj.get("parameters")
        if isinstance(parameters, dict) and len(parameters) > 512:
            causes.append(invalid("parameters", "<omitted>", "must have at most 512 parameters"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        if normalised(new.get("parameters")) != normalised(old.get("parameters")):
            causes.append(forbidden("parameters", "updates to parameters are forbidden."))
        if new.get("provisioner") != old.get("provisioner"):
            causes.append(forbidden("provisioner", "updates to provisioner are forbidden."))
        if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
            causes.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        return causes + immutable(new.get("volumeBindingMode"), old.get("volumeBindingMode"),
                                   "volumeBindingMode")


HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


class PriorityClassStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        set_default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        value, name = obj.get("value"), name_of(obj)
        if value is None:
            causes.append(required("value"))
        elif not is_int(value):
            causes.append(invalid("value", value, "must be an integer"))
        if name.startswith("system-"):
            reserved = "priority class names with 'system-' prefix are reserved for system use only. error: "
            if name not in SYSTEM_PRIORITY_CLASSES:
                causes.append(forbidden("metadata.name",
                                        f"{reserved}{name} is not a known system priority class"))
            elif value != SYSTEM_PRIORITY_CLASSES[name]:
                causes.append(forbidden("metadata.name", f"{reserved}value of {name} PriorityClass must be "
                                                         f"{SYSTEM_PRIORITY_CLASSES[name]}"))
        elif is_int(value) and value > HIGHEST_USER_PRIORITY:
            causes.append(forbidden("value", f"maximum allowed value of a user defined priority is "
                                             f"{HIGHEST_USER_PRIORITY}"))
        policy = obj.get("preemptionPolicy")
        if policy not in ("Never", "PreemptLowerPriority"):
            causes.append(not_supported("preemptionPolicy", policy, ("Never", "PreemptLowerPriority")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        if new.get("value") != old.get("value"):
            causes.append(forbidden("value", "may not be changed in an update."))
        return causes + immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"),
                                   "preemptionPolicy")
