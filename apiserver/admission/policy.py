"""The ValidatingAdmissionPolicy(Binding) kinds: validation and compilation of their expressions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import Cause
from apiserver.resourcetypes import Strategy
from cel import CelCompileError, CompiledExpression, compile_expression

# What policy expressions may refer to (kube's admission CEL environment, minus the authorizer).
BASE_VARIABLES: dict[str, str | None] = {
    "object": None, "oldObject": None, "request": None, "params": None, "namespaceObject": None,
    "variables": None,
}
VALIDATION_ACTIONS = ("Deny", "Warn", "Audit")


@dataclass
class Validation:
    expression: CompiledExpression
    message: str
    message_expression: CompiledExpression | None
    reason: str


@dataclass
class CompiledPolicy:
    """A policy ready to evaluate; ``errors`` is non-empty when its CEL could not be compiled."""

    name: str
    spec: Mapping[str, Any]
    failure_policy: str
    match_conditions: list[tuple[str, CompiledExpression]] = field(default_factory=list)
    variables: list[tuple[str, CompiledExpression]] = field(default_factory=list)
    validations: list[Validation] = field(default_factory=list)
    errors: list[Cause] = field(default_factory=list)


def _compile(source: Any, path: str, errors: list[Cause]) -> CompiledExpression | None:
    if not isinstance(source, str) or not source.strip():
        errors.append(Cause("FieldValueRequired", "Required value: expression is not specified", path))
        return None
    try:
        return compile_expression(source, BASE_VARIABLES)
    except CelCompileError as exc:
        errors.append(Cause("FieldValueInvalid", f"Invalid value: {source!r}: compilation failed: {exc.issues}", path))
        return None


def compile_policy(policy: Mapping[str, Any]) -> CompiledPolicy:
    spec = policy.get("spec") or {}
    errors: list[Cause] = []
    compiled = CompiledPolicy(policy.get("metadata", {}).get("name", ""), spec,
                              spec.get("failurePolicy") or "Fail", errors=errors)
    if compiled.failure_policy not in ("Fail", "Ignore"):
        errors.append(Cause("FieldValueNotSupported", f'Unsupported value: "{compiled.failure_policy}": '
                            'supported values: "Fail", "Ignore"', "spec.failurePolicy"))
    for i, cond in enumerate(spec.get("matchConditions") or []):
        expr = _compile(cond.get("expression"), f"spec.matchConditions[{i}].expression", errors)
        if expr is not None:
            compiled.match_conditions.append((cond.get("name", f"condition-{i}"), expr))
    for i, var in enumerate(spec.get("variables") or []):
        expr = _compile(var.get("expression"), f"spec.variables[{i}].expression", errors)
        if not var.get("name"):
            errors.append(Cause("FieldValueRequired", "Required value: name is not specified",
                                f"spec.variables[{i}].name"))
        elif expr is not None:
            compiled.variables.append((var["name"], expr))
    validations = spec.get("validations") or []
    if not validations and not spec.get("auditAnnotations"):
        errors.append(Cause("FieldValueRequired", "Required value: validations or auditAnnotations must contain "
                            "at least one item", "spec.validations"))
    for i, val in enumerate(validations):
        expr = _compile(val.get("expression"), f"spec.validations[{i}].expression", errors)
        message_expr = None
        if val.get("messageExpression"):
            message_expr = _compile(val["messageExpression"], f"spec.validations[{i}].messageExpression", errors)
        if expr is not None:
            compiled.validations.append(Validation(expr, val.get("message") or "", message_expr,
                                                   val.get("reason") or "Invalid"))
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict) or not constraints.get("resourceRules"):
        errors.append(Cause("FieldValueRequired", "Required value", "spec.matchConstraints.resourceRules"))
    return compiled


class ValidatingAdmissionPolicyStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj.setdefault("spec", {}).setdefault("failurePolicy", "Fail")
        obj["status"] = {"observedGeneration": 1}

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new.setdefault("spec", {}).setdefault("failurePolicy", "Fail")

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        return compile_policy(obj).errors


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("policyName"):
            causes.append(Cause("FieldValueRequired", "Required value", "spec.policyName"))
        actions = spec.get("validationActions") or []
        if not actions:
            causes.append(Cause("FieldValueRequired", "Required value", "spec.validationActions"))
        for i, action in enumerate(actions):
            if action not in VALIDATION_ACTIONS:
                causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{action}": supported values: '
                                    '"Audit", "Deny", "Warn"', f"spec.validationActions[{i}]"))
        if "Deny" in actions and "Warn" in actions:
            causes.append(Cause("FieldValueInvalid", "Invalid value: must not contain both Deny and Warn "
                                "(repeating the same validation failure information in the API response and "
                                "headers serves no purpose)", "spec.validationActions"))
        if len(set(actions)) != len(actions):
            causes.append(Cause("FieldValueDuplicate", "Duplicate value", "spec.validationActions"))
        return causes
