"""Match requests to bound ValidatingAdmissionPolicies and evaluate them.

Policies and bindings of every space are kept compiled in memory (loaded at startup, refreshed from
the watch bus), so a request that no policy matches costs a dictionary lookup. Matching follows
kube: the policy's ``matchConstraints`` and the binding's ``matchResources`` (resource rules,
exclusions, namespace and object selectors), then ``matchConditions``; a failed validation denies
(reason and code from its ``reason``), warns or is recorded for audit, per the binding's
``validationActions``. Evaluation errors follow the policy's ``failurePolicy``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery import errors
from apimachinery.selectors import label_selector_from_object
from apiserver.admission.policy import CompiledPolicy, compile_policy
from apiserver.resourcetypes import ResourceType
from apiserver.store import LogStore
from apiserver.watch import Entry
from cel import CelCostExceeded, CelEvalError

log = logging.getLogger(__name__)

POLICIES = "validatingadmissionpolicies.admissionregistration.k8s.io"
BINDINGS = "validatingadmissionpolicybindings.admissionregistration.k8s.io"
_REASON_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}


@dataclass
class AdmissionRequest:
    space: str
    rtype: ResourceType
    operation: str  # CREATE | UPDATE | DELETE
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    namespace_object: dict[str, Any] | None
    subresource: str = ""
    dry_run: bool = False

    @property
    def name(self) -> str:
        return ((self.object or self.old_object or {}).get("metadata") or {}).get("name", "")

    @property
    def namespace(self) -> str:
        return ((self.object or self.old_object or {}).get("metadata") or {}).get("namespace", "")

    def cel_request(self) -> dict[str, Any]:
        t = self.rtype
        return {
            "kind": {"group": t.group, "version": t.version, "kind": t.kind},
            "resource": {"group": t.group, "version": t.version, "resource": t.plural},
            "subResource": self.subresource, "name": self.name, "namespace": self.namespace,
            "operation": self.operation, "userInfo": {"username": "spacehub:admin", "groups": ["system:masters"]},
            "dryRun": self.dry_run,
        }


def _matches_any(values: Sequence[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def rule_matches(rule: Mapping[str, Any], req: AdmissionRequest) -> bool:
    t = req.rtype
    if not _matches_any(rule.get("apiGroups"), t.group) or not _matches_any(rule.get("apiVersions"), t.version):
        return False
    if not _matches_any(rule.get("operations"), req.operation):
        return False
    resource = f"{t.plural}/{req.subresource}" if req.subresource else t.plural
    resources = rule.get("resources") or []
    wanted = {resource, "*/*"} | ({"*"} if not req.subresource else {f"*/{req.subresource}", f"{t.plural}/*"})
    if not wanted & set(resources):
        return False
    names = rule.get("resourceNames")
    if names and req.name not in names:
        return False
    scope = rule.get("scope") or "*"
    return scope == "*" or scope == ("Namespaced" if t.namespaced else "Cluster")


def resources_match(match: Mapping[str, Any] | None, req: AdmissionRequest) -> bool:
    if not match:
        return True
    rules = match.get("resourceRules")
    if rules is not None and not any(rule_matches(r, req) for r in rules):
        return False
    if any(rule_matches(r, req) for r in match.get("excludeResourceRules") or []):
        return False
    ns_selector = match.get("namespaceSelector")
    if ns_selector and req.rtype.namespaced:
        labels = ((req.namespace_object or {}).get("metadata") or {}).get("labels")
        if not label_selector_from_object(ns_selector).matches(labels):
            return False
    elif ns_selector and req.rtype.kind == "Namespace":
        labels = ((req.object or req.old_object or {}).get("metadata") or {}).get("labels")
        if not label_selector_from_object(ns_selector).matches(labels):
            return False
    obj_selector = match.get("objectSelector")
    if obj_selector:
        sel = label_selector_from_object(obj_selector)
        candidates = [o for o in (req.object, req.old_object) if o is not None]
        if not any(sel.matches((o.get("metadata") or {}).get("labels")) for o in candidates):
            return False
    return True


@dataclass
class Verdict:
    denied: errors.StatusError | None
    warnings: list[str]


class _SpacePolicies:
    def __init__(self) -> None:
        self.policies: dict[str, CompiledPolicy] = {}
        self.bindings: dict[str, dict[str, Any]] = {}


class AdmissionEngine:
    def __init__(self, store: LogStore) -> None:
        self.store = store
        self._spaces: dict[str, _SpacePolicies] = {}

    # --- index ----------------------------------------------------------------------------------

    def load(self) -> None:
        for resource in (POLICIES, BINDINGS):
            for row in self.store.list_resource_everywhere(resource):
                self._apply(row.key.space, resource, row.key.name, orjson.loads(row.value))

    def _apply(self, space: str, resource: str, name: str, obj: dict[str, Any] | None) -> None:
        entry = self._spaces.setdefault(space, _SpacePolicies())
        if resource == POLICIES:
            if obj is None:
                entry.policies.pop(name, None)
            else:
                entry.policies[name] = compile_policy(obj)
        elif obj is None:
            entry.bindings.pop(name, None)
        else:
            entry.bindings[name] = obj

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            key = e.row.key
            if key.resource in (POLICIES, BINDINGS):
                self._apply(key.space, key.resource, key.name, None if e.row.deleted else e.obj())

    def has_policies(self, space: str) -> bool:
        entry = self._spaces.get(space)
        return entry is not None and bool(entry.bindings)

    # --- evaluation -----------------------------------------------------------------------------

    def evaluate(self, req: AdmissionRequest, params_for: Callable[[CompiledPolicy, dict[str, Any]],
                                                                   list[dict[str, Any]] | None]) -> Verdict:
        """Evaluate every binding in the request's space (blocking: run it in a worker thread)."""
        entry = self._spaces.get(req.space)
        warnings: list[str] = []
        if entry is None:
            return Verdict(None, warnings)
        for binding_name, binding in sorted(entry.bindings.items()):
            spec = binding.get("spec") or {}
            policy = entry.policies.get(spec.get("policyName", ""))
            if policy is None or policy.errors:
                continue
            if not resources_match(policy.spec.get("matchConstraints"), req):
                continue
            if not resources_match(spec.get("matchResources"), req):
                continue
            actions = spec.get("validationActions") or ["Deny"]
            param_sets = params_for(policy, binding)
            if param_sets is None:  # parameters required but missing, and the binding says Deny
                denied = errors.StatusError(403, "Forbidden", f"ValidatingAdmissionPolicy '{policy.name}' with "
                                            f"binding '{binding_name}' denied request: failed to configure binding: "
                                            "no params found for policy binding with `Deny` "
                                            "parameterNotFoundAction")
                return Verdict(denied, warnings)
            if policy.spec.get("paramKind") and not param_sets:
                continue  # parameterNotFoundAction: Allow
            for params in param_sets or [None]:
                failure = self._evaluate_policy(policy, req, params)
                if failure is None:
                    continue
                message, reason = failure
                text = f"ValidatingAdmissionPolicy '{policy.name}' with binding '{binding_name}' denied request: " \
                       f"{message}"
                if "Warn" in actions:
                    warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with binding "
                                    f"'{binding_name}': {message}")
                if "Audit" in actions:
                    log.info("admission audit: %s (%s %s/%s in space %s)", text, req.operation, req.namespace,
                             req.name, req.space)
                if "Deny" in actions:
                    code = _REASON_CODES.get(reason, 422)
                    qualified = f"{req.rtype.plural}.{req.rtype.group}" if req.rtype.group else req.rtype.plural
                    return Verdict(errors.StatusError(
                        code, reason, f'{qualified} "{req.name}" is {"invalid" if code == 422 else "forbidden"}: '
                        f"{text}", name=req.name, group=req.rtype.group, kind=req.rtype.plural,
                        causes=[errors.Cause("FieldValueInvalid" if code == 422 else reason, text)]), warnings)
        return Verdict(None, warnings)

    def _evaluate_policy(self, policy: CompiledPolicy, req: AdmissionRequest,
                         params: dict[str, Any] | None) -> tuple[str, str] | None:
        """The (message, reason) of the first failed validation, or None if the request passes."""
        activation: dict[str, Any] = {
            "object": req.object, "oldObject": req.old_object, "request": req.cel_request(),
            "params": params, "namespaceObject": req.namespace_object, "variables": {},
        }
        try:
            for _name, cond in policy.match_conditions:
                if cond.evaluate(activation) is not True:
                    return None
            variables: dict[str, Any] = {}
            activation["variables"] = variables
            for name, expr in policy.variables:
                variables[name] = expr.evaluate(activation)
            for validation in policy.validations:
                if validation.expression.evaluate(activation) is True:
                    continue
                message = validation.message or f"failed expression: {validation.expression.source}"
                if validation.message_expression is not None:
                    try:
                        evaluated = validation.message_expression.evaluate(activation)
                        if isinstance(evaluated, str) and evaluated.strip():
                            message = evaluated
                    except CelEvalError:
                        pass
                return message, validation.reason
        except CelCostExceeded:
            if policy.failure_policy == "Ignore":
                return None
            return "validation failed due to running out of cost budget", "Invalid"
        except CelEvalError as exc:
            if policy.failure_policy == "Ignore":
                return None
            return f"expression evaluation failed: {exc}", "Invalid"
        return None
