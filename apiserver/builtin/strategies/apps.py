"""apps/v1 workloads: Deployments, ReplicaSets, StatefulSets and DaemonSets."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import forbidden, invalid, is_dns1123_subdomain, not_supported
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import (
    Obj,
    child,
    immutable,
    int_or_percent_is_zero,
    is_int,
    nonnegative,
    normalised,
    set_default,
    spec_of,
    validate_int_or_percent,
)
from apiserver.builtin.strategies.pods import default_pod_template, validate_selector_and_template


class _WorkloadStrategy(BuiltinStrategy):
    """What Deployments, ReplicaSets, StatefulSets and DaemonSets share."""

    has_status = True
    # Upstream's wording, which differs per kind (ReplicaSets reuse the Deployment message).
    empty_selector = "empty selector is invalid for deployment"
    deadline_owner = "ReplicaSet"

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        default_pod_template(spec.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes = nonnegative(spec, "spec.replicas", "replicas")
        causes += nonnegative(spec, "spec.minReadySeconds", "minReadySeconds")
        causes += nonnegative(spec, "spec.revisionHistoryLimit", "revisionHistoryLimit")
        causes += validate_selector_and_template(spec, self.empty_selector)
        deadline = get(spec, "template", "spec", "activeDeadlineSeconds")
        if deadline is not None:
            causes.append(self._deadline_cause(deadline))
        return causes

    def _deadline_cause(self, value: Any) -> Cause:
        # Controllers replace pods forever; a pod deadline would make them fail on schedule.
        return forbidden("spec.template.spec.activeDeadlineSeconds",
                         f"activeDeadlineSeconds in {self.deadline_owner} is not Supported")

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # apps/v1 never lets a controller's selector move: it would orphan the pods it owns.
        return self.validate(new) + immutable(get(new, "spec", "selector"), get(old, "spec", "selector"),
                                               "spec.selector")


class DeploymentStrategy(_WorkloadStrategy):
    """Rolling updates of ReplicaSets."""

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = child(obj, "spec")
        set_default(spec, "replicas", 1)
        strategy = child(spec, "strategy")
        set_default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = child(strategy, "rollingUpdate")
            set_default(rolling, "maxUnavailable", "25%")
            set_default(rolling, "maxSurge", "25%")
        set_default(spec, "revisionHistoryLimit", 10)
        set_default(spec, "progressDeadlineSeconds", 600)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        spec = spec_of(obj)
        strategy = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
        strategy_type = strategy.get("type")
        if strategy_type not in ("Recreate", "RollingUpdate"):
            causes.append(not_supported("spec.strategy.type", strategy_type, ("Recreate", "RollingUpdate")))
        elif strategy_type == "Recreate" and strategy.get("rollingUpdate") is not None:
            causes.append(forbidden("spec.strategy.rollingUpdate",
                                    "may not be specified when strategy `type` is 'Recreate'"))
        rolling = strategy.get("rollingUpdate")
        if strategy_type == "RollingUpdate" and isinstance(rolling, dict):
            causes += _validate_rolling_update(rolling, "spec.strategy.rollingUpdate")
        deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
        if is_int(deadline):
            causes += nonnegative(spec, "spec.progressDeadlineSeconds", "progressDeadlineSeconds")
            if is_int(min_ready) and deadline <= min_ready:
                causes.append(invalid("spec.progressDeadlineSeconds", deadline,
                                      "must be greater than minReadySeconds"))
        return causes


def _validate_rolling_update(rolling: Obj, path: str) -> list[Cause]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = validate_int_or_percent(unavailable, f"{path}.maxUnavailable")
    causes += validate_int_or_percent(surge, f"{path}.maxSurge", at_most_100=False)
    if int_or_percent_is_zero(unavailable) and int_or_percent_is_zero(surge):
        causes.append(invalid(f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
    return causes


class ReplicaSetStrategy(_WorkloadStrategy):
    """A fixed number of identical pods."""

    def default(self, obj: Obj) -> None:
        super().default(obj)
        set_default(child(obj, "spec"), "replicas", 1)

    def initial_status(self, obj: Obj) -> Obj:
        return {"replicas": 0}


_STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                        "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


class StatefulSetStrategy(_WorkloadStrategy):
    empty_selector = "empty selector is not valid for statefulset."

    def _deadline_cause(self, value: Any) -> Cause:
        return invalid("spec.template.spec.activeDeadlineSeconds", value, "must not be specified")

    def initial_status(self, obj: Obj) -> Obj:
        return {"replicas": 0, "availableReplicas": 0}

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = child(obj, "spec")
        set_default(spec, "podManagementPolicy", "OrderedReady")
        update = child(spec, "updateStrategy")
        if not update.get("type"):
            update["type"] = "RollingUpdate"
            child(update, "rollingUpdate")
        if update["type"] == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
            set_default(update["rollingUpdate"], "partition", 0)
        retention = child(spec, "persistentVolumeClaimRetentionPolicy")
        set_default(retention, "whenDeleted", "Retain")
        set_default(retention, "whenScaled", "Retain")
        set_default(spec, "replicas", 1)
        set_default(spec, "revisionHistoryLimit", 10)
        for claim in dicts(spec.get("volumeClaimTemplates")):
            set_default(child(claim, "spec"), "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        spec = spec_of(obj)
        policy = spec.get("podManagementPolicy")
        if policy not in ("OrderedReady", "Parallel"):
            causes.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
        update = spec.get("updateStrategy") if isinstance(spec.get("updateStrategy"), dict) else {}
        if update.get("type") == "OnDelete" and update.get("rollingUpdate") is not None:
            causes.append(invalid("spec.updateStrategy.rollingUpdate", update["rollingUpdate"],
                                  "only allowed for updateStrategy 'RollingUpdate'"))
        elif update.get("type") == "RollingUpdate":
            causes += nonnegative(update, "spec.updateStrategy.rollingUpdate.partition", "rollingUpdate",
                                   "partition")
        else:
            causes.append(invalid("spec.updateStrategy", update, "must be 'RollingUpdate' or 'OnDelete'"))
        for i, claim in enumerate(dicts(spec.get("volumeClaimTemplates"))):
            name = get(claim, "metadata", "name")
            causes += [invalid(f"spec.volumeClaimTemplates[{i}].metadata.name", name, m)
                       for m in is_dns1123_subdomain(str(name or ""))]
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        frozen_new = {k: v for k, v in spec_of(new).items() if k not in _STATEFULSET_MUTABLE}
        frozen_old = {k: v for k, v in spec_of(old).items() if k not in _STATEFULSET_MUTABLE}
        if normalised(frozen_new) != normalised(frozen_old):
            causes.append(forbidden("spec", "updates to statefulset spec for fields other than 'replicas', "
                                    "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                                    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                    "forbidden"))
        return causes


class DaemonSetStrategy(_WorkloadStrategy):
    empty_selector = "empty selector is invalid for daemonset"
    deadline_owner = "DaemonSet"

    def initial_status(self, obj: Obj) -> Obj:
        return {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
                "numberReady": 0}

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = child(obj, "spec")
        update = child(spec, "updateStrategy")
        set_default(update, "type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            rolling = child(update, "rollingUpdate")
            set_default(rolling, "maxUnavailable", 1)
            set_default(rolling, "maxSurge", 0)
        set_default(spec, "revisionHistoryLimit", 10)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        update = get(obj, "spec", "updateStrategy") or {}
        if update.get("type") not in ("OnDelete", "RollingUpdate"):
            causes.append(not_supported("spec.updateStrategy.type", update.get("type"),
                                        ("OnDelete", "RollingUpdate")))
        elif update.get("type") == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
            causes += _validate_rolling_update(update["rollingUpdate"], "spec.updateStrategy.rollingUpdate")
        return causes
