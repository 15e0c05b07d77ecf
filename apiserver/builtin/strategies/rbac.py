"""rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_dns1123_subdomain, is_path_segment_name, not_supported, required
from apimachinery.nested import dicts
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.labelselectors import validate_label_selector
from apiserver.builtin.strategies.objectfields import Obj, child, normalised, set_default

RBAC_GROUP = "rbac.authorization.k8s.io"


def _validate_rules(rules: Any, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(dicts(rules)):
        at = f"rules[{i}]"
        if not rule.get("verbs"):
            causes.append(required(f"{at}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                causes.append(invalid(f"{at}.nonResourceURLs", urls,
                                      "namespaced rules cannot apply to non-resource URLs"))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.append(invalid(f"{at}.nonResourceURLs", urls,
                                      "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not rule.get("apiGroups"):
            causes.append(required(f"{at}.apiGroups", "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            causes.append(required(f"{at}.resources", "resource rules must supply at least one resource"))
    return causes


class RoleStrategy(BuiltinStrategy):
    name_rule = "path-segment"
    namespaced = True

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _validate_rules(obj.get("rules"), self.namespaced)
        aggregation = obj.get("aggregationRule")
        if isinstance(aggregation, dict):
            for i, selector in enumerate(dicts(aggregation.get("clusterRoleSelectors"))):
                causes += validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
        return causes


class ClusterRoleStrategy(RoleStrategy):
    namespaced = False


class RoleBindingStrategy(BuiltinStrategy):
    name_rule = "path-segment"
    namespaced = True
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")

    def default(self, obj: Obj) -> None:
        set_default(child(obj, "roleRef"), "apiGroup", RBAC_GROUP)
        for subject in dicts(obj.get("subjects")):
            # ServiceAccounts are in the core group, which is the empty (and so omitted) apiGroup.
            if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP

    def validate(self, obj: Obj) -> list[Cause]:
        ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
        causes: list[Cause] = []
        if ref.get("apiGroup") != RBAC_GROUP:
            causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup"), (RBAC_GROUP,)))
        if ref.get("kind") not in self.role_kinds:
            causes.append(not_supported("roleRef.kind", ref.get("kind"), self.role_kinds))
        name = ref.get("name")
        if not name:
            causes.append(required("roleRef.name"))
        else:
            causes += [invalid("roleRef.name", name, m) for m in is_path_segment_name(str(name))]
        for i, subject in enumerate(dicts(obj.get("subjects"))):
            causes += self._validate_subject(subject, f"subjects[{i}]")
        return causes

    def _validate_subject(self, subject: Obj, path: str) -> list[Cause]:
        causes: list[Cause] = []
        name, kind, group = subject.get("name"), subject.get("kind"), subject.get("apiGroup") or ""
        if not name:
            causes.append(required(f"{path}.name"))
        if kind == "ServiceAccount":
            if name:
                causes += [invalid(f"{path}.name", name, m) for m in is_dns1123_subdomain(str(name))]
            if group:
                causes.append(not_supported(f"{path}.apiGroup", group, ("",)))
            if not self.namespaced and not subject.get("namespace"):
                causes.append(required(f"{path}.namespace"))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                causes.append(not_supported(f"{path}.apiGroup", group, (RBAC_GROUP,)))
        else:
            causes.append(not_supported(f"{path}.kind", kind, ("ServiceAccount", "User", "Group")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        # A binding is a grant of one role: pointing it elsewhere would silently change who can do what.
        if normalised(new.get("roleRef")) != normalised(old.get("roleRef")):
            causes.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return causes


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    namespaced = False
    role_kinds = ("ClusterRole",)
