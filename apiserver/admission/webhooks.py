"""Validating and Mutating WebhookConfigurations: their validation (as kube validates them), defaults and
the per-space index of compiled webhooks.

A webhook is reached only through ``clientConfig.url`` (``apiserver.clientconfig``).
``matchConditions`` are compiled when written, with the admission CEL environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimachinery.errors import Cause, StatusError
from apimachinery.selectors import label_selector_from_object
from apiserver.admission.engine import AdmissionRequest, resources_match
from apiserver.clientconfig import validate_client_config
from apiserver.resourcetypes import Strategy
from apiserver.store import LogStore
from apiserver.watch import Entry
from cel import CelCompileError, CompiledExpression, compile_expression

VALIDATING = "validatingwebhookconfigurations.admissionregistration.k8s.io"
MUTATING = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
# What a webhook's matchConditions may refer to (kube's environment, minus the authorizer).
CONDITION_VARIABLES: dict[str, str | None] = {"object": None, "oldObject": None, "request": None}
OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_MATCH_CONDITIONS = 64


@dataclass
class Webhook:
    """One webhook of a configuration, defaulted and compiled."""

    name: str
    configuration: str
    url: str
    ca_bundle: bytes | None
    rules: list[dict[str, Any]]
    match_policy: str
    namespace_selector: dict[str, Any]
    object_selector: dict[str, Any]
    failure_policy: str
    timeout_seconds: int
    reinvoke: bool
    match_conditions: list[tuple[str, CompiledExpression]] = field(default_factory=list)

    def matches(self, req: AdmissionRequest) -> bool:
        """Rules and selectors (kube's order); matchConditions are evaluated separately (they can fail)."""
        rules = self.rules
        if self.match_policy == "Equivalent":
            # Every version of a group's resource is the same object: a rule naming another version matches.
            rules = [{**rule, "apiVersions": ["*"]} for rule in rules]
        return resources_match({"resourceRules": rules, "namespaceSelector": self.namespace_selector,
                                "objectSelector": self.object_selector}, req)


def _default_webhook(hook: dict[str, Any], mutating: bool) -> None:
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    hook.setdefault("namespaceSelector", {})
    hook.setdefault("objectSelector", {})
    hook.setdefault("timeoutSeconds", 10)
    if mutating:
        hook.setdefault("reinvocationPolicy", "Never")
    for rule in hook.get("rules") or []:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")


def _supported(value: Any, allowed: Sequence[str], path: str, causes: list[Cause]) -> None:
    if value not in allowed:
        quoted = ", ".join(f'"{a}"' for a in allowed)
        causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {quoted}',
                            path))


def _compile_conditions(conditions: Any, path: str, causes: list[Cause]) -> list[tuple[str, CompiledExpression]]:
    compiled: list[tuple[str, CompiledExpression]] = []
    if not isinstance(conditions, list):
        return compiled
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(Cause("FieldValueTooMany", f"Too many: {len(conditions)}: must have at most "
                            f"{MAX_MATCH_CONDITIONS} items", path))
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        name = cond.get("name") if isinstance(cond, dict) else None
        if not name:
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}[{i}].name"))
        elif name in seen:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}[{i}].name"))
        seen.add(name or "")
        source = cond.get("expression") if isinstance(cond, dict) else None
        if not isinstance(source, str) or not source.strip():
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}[{i}].expression"))
            continue
        try:
            expression = compile_expression(source, CONDITION_VARIABLES)
        except CelCompileError as exc:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {source!r}: compilation failed: {exc.issues}",
                                f"{path}[{i}].expression"))
            continue
        compiled.append((name or "", expression))
    return compiled


def compile_webhooks(config: Mapping[str, Any], mutating: bool) -> tuple[list[Webhook], list[Cause]]:
    """The configuration's webhooks ready to call, and what is wrong with it (kube's field paths)."""
    causes: list[Cause] = []
    hooks: list[Webhook] = []
    config_name = (config.get("metadata") or {}).get("name", "")
    seen: set[str] = set()
    for i, hook in enumerate(config.get("webhooks") or []):
        path = f"webhooks[{i}]"
        name = hook.get("name") or ""
        if not name:
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}.name"))
        elif len(name.split(".")) < 3:
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{name}": should be a domain with at least '
                                "three segments separated by dots", f"{path}.name"))
        elif name in seen:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.name"))
        seen.add(name)
        client = hook.get("clientConfig") or {}
        ca_bundle = validate_client_config(client, f"{path}.clientConfig", causes)
        versions = hook.get("admissionReviewVersions") or []
        if not versions:
            causes.append(Cause("FieldValueRequired", "Required value: must specify one of v1",
                                f"{path}.admissionReviewVersions"))
        elif "v1" not in versions:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {versions!r}: must include at least one of v1",
                                f"{path}.admissionReviewVersions"))
        side_effects = hook.get("sideEffects")
        if side_effects is None:
            causes.append(Cause("FieldValueRequired", "Required value: must specify one of None, NoneOnDryRun",
                                f"{path}.sideEffects"))
        else:
            _supported(side_effects, ("None", "NoneOnDryRun"), f"{path}.sideEffects", causes)
        failure_policy = hook.get("failurePolicy", "Fail")
        _supported(failure_policy, ("Fail", "Ignore"), f"{path}.failurePolicy", causes)
        match_policy = hook.get("matchPolicy", "Equivalent")
        _supported(match_policy, ("Equivalent", "Exact"), f"{path}.matchPolicy", causes)
        timeout = hook.get("timeoutSeconds", 10)
        if not isinstance(timeout, int) or not 1 <= timeout <= 30:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {timeout}: the timeout value must be between "
                                "1 and 30 seconds", f"{path}.timeoutSeconds"))
            timeout = 10
        reinvocation = hook.get("reinvocationPolicy", "Never")
        if mutating:
            _supported(reinvocation, ("Never", "IfNeeded"), f"{path}.reinvocationPolicy", causes)
        rules = [r for r in hook.get("rules") or [] if isinstance(r, dict)]
        for j, rule in enumerate(rules):
            for k, operation in enumerate(rule.get("operations") or []):
                _supported(operation, OPERATIONS, f"{path}.rules[{j}].operations[{k}]", causes)
            _supported(rule.get("scope", "*"), ("*", "Cluster", "Namespaced"), f"{path}.rules[{j}].scope", causes)
        for selector in ("namespaceSelector", "objectSelector"):
            try:
                label_selector_from_object(hook.get(selector) or {})
            except StatusError as exc:
                causes.append(Cause("FieldValueInvalid", f"Invalid value: {exc.message}", f"{path}.{selector}"))
        conditions = _compile_conditions(hook.get("matchConditions"), f"{path}.matchConditions", causes)
        hooks.append(Webhook(name, config_name, client.get("url") or "", ca_bundle, rules, match_policy,
                             hook.get("namespaceSelector") or {}, hook.get("objectSelector") or {}, failure_policy,
                             timeout, mutating and reinvocation == "IfNeeded", conditions))
    return hooks, causes


class _ConfigurationStrategy(Strategy):
    mutating = False

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        for hook in obj.get("webhooks") or []:
            if isinstance(hook, dict):
                _default_webhook(hook, self.mutating)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        return compile_webhooks(obj, self.mutating)[1]


class ValidatingWebhookConfigurationStrategy(_ConfigurationStrategy):
    mutating = False


class MutatingWebhookConfigurationStrategy(_ConfigurationStrategy):
    mutating = True


class WebhookIndex:
    """Every space's webhooks, compiled, in kube's calling order (configurations by name, then as listed);
    loaded at startup and kept current from the watch bus."""

    def __init__(self, store: LogStore) -> None:
        self.store = store
        # (space, resource) -> configuration name -> its webhooks
        self._configs: dict[tuple[str, str], dict[str, list[Webhook]]] = {}

    def load(self) -> None:
        for resource in (VALIDATING, MUTATING):
            for row in self.store.list_resource_everywhere(resource):
                self._apply(row.key.space, resource, row.key.name, orjson.loads(row.value))

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            key = e.row.key
            if key.resource in (VALIDATING, MUTATING):
                self._apply(key.space, key.resource, key.name, None if e.row.deleted else e.obj())

    def _apply(self, space: str, resource: str, name: str, obj: dict[str, Any] | None) -> None:
        configs = self._configs.setdefault((space, resource), {})
        if obj is None:
            configs.pop(name, None)
            return
        hooks, causes = compile_webhooks(obj, resource == MUTATING)
        if causes:  # written before a check existed: such a configuration calls nothing
            configs.pop(name, None)
        else:
            configs[name] = hooks

    def webhooks(self, space: str, mutating: bool) -> list[Webhook]:
        configs = self._configs.get((space, MUTATING if mutating else VALIDATING))
        if not configs:
            return []
        return [hook for name in sorted(configs) for hook in configs[name]]
