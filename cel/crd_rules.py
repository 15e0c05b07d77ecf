"""``x-kubernetes-validations`` of a CRD schema: compiled once per schema, evaluated on every write.

Owns what ``apiextensions-apiserver/pkg/apiserver/schema/cel`` does: typing ``self``/``oldSelf``
from the structural schema (:mod:`cel.crd_schema`), the CRD-creation errors (compile errors,
result types, ``reason``/``fieldPath`` checks, estimated cost per rule — times how often it may run —
and in total, worded as upstream words them), and at write time the walk over the object with list/map
correlation for transition rules, ``optionalOldSelf``, ``messageExpression``, ``fieldPath``,
``reason`` and the per-call and per-object cost budgets. It never raises: every problem is a Cause.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import Cause
from apimachinery.gofmt import go_quote
from apimachinery.names import duplicate, forbidden, invalid, not_supported, required
from cel import (
    PER_CALL_LIMIT,
    CelCompileError,
    CelCostExceeded,
    CelEvalError,
    CompiledExpression,
    compile_typed,
)
from cel.cost import Estimator, SchemaSizer
from cel.crd_schema import child_cardinality, max_cardinality, schema_type
from cel.estimates import UINT64_MAX, mul_u64
from cel.stdlib.timestamps import parse_duration, parse_timestamp
from cel.types import DYN, CelType, EvalError, Optional

# kube-apiserver's limits (apiextensions validation and apiserver/pkg/apis/cel/config.go).
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024
SCHEMA_PATH = "spec.validation.openAPIV3Schema"
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


@dataclass
class _Rule:
    spec: Mapping[str, Any]
    program: CompiledExpression
    message_expression: CompiledExpression | None
    field_path: str
    reason: str
    optional_old_self: bool

    @property
    def uses_old_self(self) -> bool:
        return "oldSelf" in self.program.references

    def error_string(self) -> str:
        message = str(self.spec.get("message") or "").strip()
        return message or str(self.spec.get("rule") or "").strip()


@dataclass
class _Node:
    """One schema node that has rules itself or below it."""

    type: str
    rules: list[_Rule] = field(default_factory=list)
    properties: dict[str, _Node] = field(default_factory=dict)
    items: _Node | None = None
    additional: _Node | None = None
    list_type: str = ""
    list_keys: tuple[str, ...] = ()
    root: bool = False


@dataclass
class CompiledRules:
    """All rules of one ``openAPIV3Schema``, compiled; ``validate_object`` may use it from many threads."""

    root: _Node | None
    self_type: CelType
    # The estimated cost of every rule and messageExpression by field path, as kube adds them up
    # against the per-CRD limit (rules already multiplied by how many times they may run).
    estimated_costs: dict[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.root is None


# --- typed values ---------------------------------------------------------------------------------


def _to_cel(value: Any, t: CelType) -> Any:
    """JSON data as the typed values rules see: whole numbers as int, date-times as timestamps …"""
    if value is None:
        return None
    kind = t.kind
    if kind == "int":
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if kind == "double":
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if kind == "dyn":
        return value
    if kind == "google.protobuf.Timestamp" and isinstance(value, str):
        try:
            return parse_timestamp(value if "T" in value else f"{value}T00:00:00Z")
        except EvalError:
            return value
    if kind == "google.protobuf.Duration" and isinstance(value, str):
        try:
            return parse_duration(value)
        except EvalError:
            return value
    if kind == "bytes" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
    if kind == "list" and isinstance(value, list):
        return [_to_cel(v, t.params[0]) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _to_cel(v, t.params[1]) for k, v in value.items()}
    if kind == "object" and isinstance(value, dict):
        by_json: Mapping[str, CelType] = t.extra.get("by_json", {})
        return {k: _to_cel(v, by_json.get(k, DYN)) for k, v in value.items()}
    return value


def _root_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    # Rules at the root see only metadata.name and metadata.generateName, as upstream.
    out = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return out


# --- compilation ----------------------------------------------------------------------------------


def _rule_value(spec: Mapping[str, Any]) -> str:
    """The rule as Go's ``%#v`` prints an ``apiextensions.ValidationRule`` in field errors."""
    reason = spec.get("reason")
    optional = spec.get("optionalOldSelf")
    reason_text = "(*apiextensions.FieldValueErrorReason)(nil)" if reason is None else \
        f"(*apiextensions.FieldValueErrorReason)({go_quote(str(reason))})"
    optional_text = "(*bool)(nil)" if optional is None else f"(*bool)({str(bool(optional)).lower()})"
    return (f"apiextensions.ValidationRule{{Rule:{go_quote(str(spec.get('rule') or ''))}, "
            f"Message:{go_quote(str(spec.get('message') or ''))}, "
            f"MessageExpression:{go_quote(str(spec.get('messageExpression') or ''))}, "
            f"Reason:{reason_text}, FieldPath:{go_quote(str(spec.get('fieldPath') or ''))}, "
            f"OptionalOldSelf:{optional_text}}}")


def _invalid_rule(path: str, spec: Mapping[str, Any], detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_rule_value(spec)}: {detail}", path)


def _cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:.6f}x"
    else:
        shown = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
            f"maxProperties, and maxLength where arrays, maps, and strings are declared)")


_FIELD_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\['((?:\\.|[^'\\])*)'\]")


def normalize_field_path(path: str, schema: Mapping[str, Any]) -> str:
    """A rule's ``fieldPath`` (``.spec.foo``, ``.labels['a.b']``) as a field path, checked against the schema."""
    out = ""
    pos = 0
    node: Mapping[str, Any] = schema
    while pos < len(path):
        m = _FIELD_PATH_TOKEN.match(path, pos)
        if not m:
            raise ValueError(f"expected [ or . but got: {path[pos:]}")
        pos = m.end()
        name = m.group(1) if m.group(1) is not None else re.sub(r"\\(.)", r"\1", m.group(2))
        props = node.get("properties")
        additional = node.get("additionalProperties")
        if isinstance(props, Mapping) and props:
            if name not in props:
                raise ValueError("does not refer to a valid field")
            node = props[name]
            out = f"{out}.{name}" if out else name
        elif isinstance(additional, Mapping):
            node = additional
            out = f"{out}[{name}]"
        else:
            raise ValueError("does not refer to a valid field")
    return out


@dataclass
class _Compiler:
    causes: list[Cause] = field(default_factory=list)
    costs: list[tuple[int, str]] = field(default_factory=list)

    def node(self, schema: Mapping[str, Any], path: str, cardinality: int | None, root: bool = False,
             uncorrelatable: str | None = None) -> _Node | None:
        """Compile the rules of ``schema`` and below; ``cardinality`` is how many times its data may occur
        in one object when every ancestor list or map is bounded, None when one is not."""
        node_type = schema_type(schema, root)
        children = child_cardinality(schema, cardinality)
        out = _Node(str(schema.get("type") or ""), root=root, list_type=str(schema.get("x-kubernetes-list-type") or ""),
                    list_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ()))
        rules = schema.get("x-kubernetes-validations")
        if isinstance(rules, list):
            for i, spec in enumerate(rules):
                if isinstance(spec, Mapping):
                    rule = self.rule(spec, f"{path}.x-kubernetes-validations[{i}]", schema, node_type, cardinality,
                                     uncorrelatable)
                    if rule is not None:
                        out.rules.append(rule)
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                if isinstance(sub, Mapping):
                    child = self.node(sub, f"{path}.properties[{name}]", children, uncorrelatable=uncorrelatable)
                    if child is not None:
                        out.properties[name] = child
        items = schema.get("items")
        if isinstance(items, Mapping):
            keep = out.list_type in ("map", "set")
            inner = uncorrelatable if keep or uncorrelatable else f"{path}.items"
            out.items = self.node(items, f"{path}.items", children, uncorrelatable=inner)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            out.additional = self.node(additional, f"{path}.additionalProperties", children,
                                       uncorrelatable=uncorrelatable)
        if out.rules or out.properties or out.items or out.additional:
            return out
        return None

    def rule(self, spec: Mapping[str, Any], path: str, schema: Mapping[str, Any], self_type: CelType,
             cardinality: int | None, uncorrelatable: str | None) -> _Rule | None:
        source = str(spec.get("rule") or "")
        rule_path = f"{path}.rule"
        ok = True
        message = spec.get("message")
        if isinstance(message, str) and message:
            if not message.strip():
                self.causes.append(required(f"{path}.message", "message must be non-empty if specified"))
                ok = False
            elif "\n" in message or "\r" in message:
                self.causes.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
                ok = False
        reason = spec.get("reason") or "FieldValueInvalid"
        if reason not in _REASONS:
            self.causes.append(not_supported(f"{path}.reason", reason, _REASONS))
            ok = False
        field_path = ""
        if spec.get("fieldPath"):
            try:
                field_path = normalize_field_path(str(spec["fieldPath"]), schema)
            except ValueError as exc:
                self.causes.append(invalid(f"{path}.fieldPath", spec["fieldPath"],
                                           f"fieldPath must be a valid path: {exc}"))
                ok = False
        if not source.strip():
            self.causes.append(required(rule_path, "rule is not specified"))
            return None
        optional_old_self = bool(spec.get("optionalOldSelf"))
        old_type = CelType("optional", (self_type,)) if optional_old_self else self_type
        variables = {"self": self_type, "oldSelf": old_type}
        try:
            program = compile_typed(source, variables)
        except CelCompileError as exc:
            self.causes.append(_invalid_rule(rule_path, spec, exc.detail))
            return None
        if program.output_type not in ("bool", "dyn"):
            self.causes.append(_invalid_rule(rule_path, spec, "cel expression must evaluate to a bool"))
            return None
        # getExpressionCost: the rule runs once per occurrence of its data — the product of the ancestors'
        # maxItems/maxProperties when all are bounded, else as many as the smallest such value fits in a request.
        runs = cardinality if cardinality is not None else max_cardinality(self_type)
        cost = mul_u64(_estimate(program, self_type), runs)
        if cost > STATIC_ESTIMATED_COST_LIMIT:
            self.causes.append(forbidden(rule_path, _cost_message("estimated rule cost", cost,
                                                                  STATIC_ESTIMATED_COST_LIMIT)))
        self.costs.append((cost, rule_path))
        if "oldSelf" in program.references and uncorrelatable is not None:
            self.causes.append(invalid(rule_path, source, f"oldSelf cannot be used on the uncorrelatable portion "
                                                          f"of the schema within {uncorrelatable}"))
            ok = False
        message_program = None
        if spec.get("messageExpression"):
            message_program = self.message_expression(spec, path, variables)
            ok = ok and message_program is not None
        if not ok:
            return None
        return _Rule(spec, program, message_program, field_path, str(reason), optional_old_self)

    def message_expression(self, spec: Mapping[str, Any], path: str,
                           variables: Mapping[str, CelType]) -> CompiledExpression | None:
        expr_path = f"{path}.messageExpression"
        # messageExpression sees oldSelf as a plain value even for optionalOldSelf rules (upstream does too).
        plain_vars = {"self": variables["self"], "oldSelf": variables["self"]}
        try:
            program = compile_typed(str(spec["messageExpression"]), plain_vars)
        except CelCompileError as exc:
            self.causes.append(_invalid_rule(expr_path, spec, f"messageExpression compilation failed: {exc.issues}"))
            return None
        if program.output_type not in ("string", "dyn"):
            self.causes.append(_invalid_rule(expr_path, spec, "messageExpression must evaluate to a string"))
            return None
        # Upstream does not multiply a messageExpression's cost by the cardinality: it only runs on failure.
        cost = _estimate(program, variables["self"])
        if cost > STATIC_ESTIMATED_COST_LIMIT:
            self.causes.append(forbidden(expr_path, _cost_message("estimated messageExpression cost", cost,
                                                                  STATIC_ESTIMATED_COST_LIMIT)))
        self.costs.append((cost, expr_path))
        return program


def _estimate(program: CompiledExpression, self_type: CelType) -> int:
    """The worst-case cost of one evaluation, sized by the schema below the rule's node."""
    assert program._root is not None
    return Estimator(program._types, SchemaSizer(self_type)).estimate(program._root).hi


def compile_crd_rules(schema: Mapping[str, Any]) -> tuple[CompiledRules, list[Cause]]:
    """Compile every rule of one structural ``openAPIV3Schema``; the causes are CRD-creation errors."""
    compiler = _Compiler()
    root = compiler.node(schema, SCHEMA_PATH, 1, root=True)
    total = min(sum(cost for cost, _ in compiler.costs), UINT64_MAX)   # upstream saturates
    if total > STATIC_ESTIMATED_CRD_COST_LIMIT:
        expensive = sorted((c for c in compiler.costs if c[0] >= STATIC_ESTIMATED_CRD_COST_LIMIT // 100),
                           key=lambda c: -c[0])[:4]
        for _cost, path in expensive:
            compiler.causes.append(forbidden(path, "contributed to estimated rule cost total exceeding cost limit "
                                                   "for entire OpenAPIv3 schema"))
        compiler.causes.append(forbidden(SCHEMA_PATH, _cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", total,
            STATIC_ESTIMATED_CRD_COST_LIMIT)))
    costs = {path: cost for cost, path in compiler.costs}
    return CompiledRules(root, schema_type(schema, root=True), costs), compiler.causes


# --- validation -----------------------------------------------------------------------------------


class _OutOfBudget(Exception):
    pass


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclass
class _Walk:
    budget: int
    causes: list[Cause] = field(default_factory=list)

    def validate(self, node: _Node, path: str, obj: Any, old: Any) -> None:
        if obj is None:
            return
        if node.rules:
            self.expressions(node, path, obj, old)
        if isinstance(obj, list) and node.items is not None:
            correlate = _correlator(node, old)
            for i, item in enumerate(obj):
                self.validate(node.items, f"{path}[{i}]", item, correlate(item))
        elif isinstance(obj, dict):
            old_map = old if isinstance(old, dict) else {}
            for key, value in obj.items():
                if node.additional is not None:
                    self.validate(node.additional, f"{path}[{key}]", value, old_map.get(key))
                sub = node.properties.get(key)
                if sub is not None:
                    self.validate(sub, _child(path, key), value, old_map.get(key))

    def expressions(self, node: _Node, path: str, obj: Any, old: Any) -> None:
        if self.budget <= 0:
            self.causes.append(invalid(path, node.type, _OUT_OF_BUDGET))
            raise _OutOfBudget
        for rule in node.rules:
            uses_old = rule.uses_old_self
            if uses_old and old is None and not rule.optional_old_self:
                continue   # transition rules only run when there is a correlated old value
            activation: dict[str, Any] = {"self": obj}
            if old is not None:
                activation["oldSelf"] = old
            rule_activation = dict(activation)
            if rule.optional_old_self:
                rule_activation["oldSelf"] = Optional(old is not None, old)
            result = self.run(rule.program, rule_activation, node, path, rule)
            if result is True or result is _SKIP:
                continue
            target = _child(path, rule.field_path) if rule.field_path else path
            detail = None
            if rule.message_expression is not None:
                detail = self.message(rule, activation, node, target)
            if detail is None:
                message = str(rule.spec.get("message") or "").strip()
                detail = message or f"failed rule: {rule.error_string()}"
            self.causes.append(_reason_cause(rule.reason, target, node.type, detail))

    def run(self, program: CompiledExpression, activation: dict[str, Any], node: _Node, path: str,
            rule: _Rule) -> Any:
        limit = min(PER_CALL_LIMIT, self.budget)
        try:
            result, cost = program.evaluate_with_cost(activation, cost_limit=limit)
        except CelCostExceeded as exc:
            if limit < PER_CALL_LIMIT:
                self.causes.append(invalid(path, node.type, _OUT_OF_BUDGET))
            else:
                self.causes.append(invalid(path, node.type, f"'{exc}': no further validation rules will be run due "
                                                            f"to call cost exceeds limit for rule: "
                                                            f"{rule.error_string()}"))
            raise _OutOfBudget from None
        except CelEvalError as exc:
            text = str(exc)
            if text.startswith("no such overload"):
                self.causes.append(invalid(path, node.type, f"'{text}': call arguments did not match a supported "
                                                            f"operator, function or macro signature for rule: "
                                                            f"{rule.error_string()}"))
            else:
                self.causes.append(invalid(path, node.type, f"{text} evaluating rule: {rule.error_string()}"))
            return _SKIP
        self.budget -= cost
        return result

    def message(self, rule: _Rule, activation: dict[str, Any], node: _Node, target: str) -> str | None:
        assert rule.message_expression is not None
        limit = min(PER_CALL_LIMIT, self.budget)
        try:
            value, cost = rule.message_expression.evaluate_with_cost(activation, cost_limit=limit)
        except CelCostExceeded:
            if limit < PER_CALL_LIMIT:
                detail = ("messageExpression evaluation failed due to running out of cost budget, no further "
                          "validation rules will be run")
            else:
                detail = (f"no further validation rules will be run due to call cost exceeds limit for "
                          f"messageExpression: {go_quote(str(rule.spec.get('messageExpression')))}")
            self.causes.append(invalid(target, node.type, detail))
            raise _OutOfBudget from None
        except CelEvalError:
            return None   # upstream logs it and falls back to message
        self.budget -= cost
        if not isinstance(value, str):
            return None
        text = value.strip()
        if not text or len(text.encode()) > MAX_MESSAGE_EXPRESSION_BYTES or "\n" in text or "\r" in text:
            return None
        return text


_SKIP = object()


def _reason_cause(reason: str, path: str, node_type: str, detail: str) -> Cause:
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(path, node_type)
    return invalid(path, node_type, detail)


def _correlator(node: _Node, old: Any) -> Any:
    """Finds the old item an item of a list corresponds to: by keys for map lists, by value for sets."""
    if not isinstance(old, list) or node.list_type not in ("map", "set"):
        return lambda item: None
    if node.list_type == "set":
        from cel.types import equal

        return lambda item: next((o for o in old if equal(o, item)), None)
    keys = node.list_keys

    def key_of(item: Any) -> Any:
        if not isinstance(item, dict):
            return None
        return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)
    by_key = {key_of(o): o for o in old if isinstance(o, dict)}
    return lambda item: by_key.get(key_of(item))


def validate_object(rules: CompiledRules, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """Evaluate every rule against ``obj`` (and ``old`` on update); one Cause per failed rule or error."""
    if rules.root is None:
        return []
    current = _to_cel(_root_view(obj), rules.self_type)
    previous = _to_cel(_root_view(old), rules.self_type) if old is not None else None
    walk = _Walk(RUNTIME_CEL_COST_BUDGET)
    try:
        walk.validate(rules.root, "", current, previous)
    except _OutOfBudget:
        pass
    except RecursionError:
        walk.causes.append(invalid("", "object", "validation failed: object nesting too deep for rule evaluation"))
    return walk.causes


__all__ = ["CompiledRules", "compile_crd_rules", "normalize_field_path", "schema_type", "validate_object"]
