"""RBAC rules: reading them from Role/ClusterRole objects, matching a request, and covering other rules.

Matching follows kube's ``RuleAllows`` (``*`` for any verb, group or resource, ``*/sub`` for one subresource of
every resource, names restricting only requests that carry a name, ``/path/*`` prefixes for non-resource
URLs); covering follows ``validation.Covers``, which decides whether someone holding some rules may grant
others (the escalation check).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from apiserver.access import EVERYTHING, Attributes, NonResourceRule, ResourceRule

Rule = ResourceRule | NonResourceRule


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def rules_of(role: dict[str, Any]) -> tuple[Rule, ...]:
    """The rules a Role or ClusterRole object states itself (aggregation is the policy index's business)."""
    out: list[Rule] = []
    for raw in role.get("rules") or ():
        if not isinstance(raw, dict):
            continue
        verbs = _strings(raw.get("verbs"))
        urls = _strings(raw.get("nonResourceURLs"))
        if urls:
            out.append(NonResourceRule(verbs, urls))
        else:
            out.append(ResourceRule(verbs, _strings(raw.get("apiGroups")), _strings(raw.get("resources")),
                                    _strings(raw.get("resourceNames"))))
    return tuple(out)


def allows(rule: Rule, attrs: Attributes) -> bool:
    if not (EVERYTHING in rule.verbs or attrs.verb in rule.verbs):
        return False
    if isinstance(rule, NonResourceRule):
        return not attrs.resource_request and any(_url_matches(url, attrs.path) for url in rule.urls)
    if not attrs.resource_request:
        return False
    if not (EVERYTHING in rule.api_groups or attrs.group in rule.api_groups):
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not any(_resource_matches(r, combined, attrs.subresource) for r in rule.resources):
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


def _resource_matches(rule_resource: str, combined: str, subresource: str) -> bool:
    if rule_resource in (EVERYTHING, combined):
        return True
    return bool(subresource) and rule_resource == f"*/{subresource}"


def _url_matches(rule_url: str, path: str) -> bool:
    if rule_url in (EVERYTHING, path):
        return True
    return rule_url.endswith("*") and path.startswith(rule_url.rstrip("*"))


def uncovered(owner: Sequence[Rule], requested: Iterable[Rule]) -> list[Rule]:
    """The atomic pieces of ``requested`` that no rule of ``owner`` covers (empty: nothing is escalated)."""
    return [piece for rule in requested for piece in _atoms(rule) if not any(_covers(o, piece) for o in owner)]


def _atoms(rule: Rule) -> list[Rule]:
    """One rule per verb x group x resource (x name), or per verb x URL, as kube's ``BreakdownRule``."""
    if isinstance(rule, NonResourceRule):
        return [NonResourceRule((verb,), (url,)) for verb in rule.verbs for url in rule.urls]
    names: tuple[tuple[str, ...], ...] = tuple((n,) for n in rule.resource_names) or ((),)
    return [ResourceRule((verb,), (group,), (resource,), name)
            for group in rule.api_groups for resource in rule.resources for verb in rule.verbs for name in names]


def _covers(owner: Rule, sub: Rule) -> bool:
    if not (EVERYTHING in owner.verbs or set(sub.verbs) <= set(owner.verbs)):
        return False
    if isinstance(sub, NonResourceRule):
        return isinstance(owner, NonResourceRule) and all(
            any(_url_covers(mine, url) for mine in owner.urls) for url in sub.urls)
    if not isinstance(owner, ResourceRule):
        return False
    if not (EVERYTHING in owner.api_groups or set(sub.api_groups) <= set(owner.api_groups)):
        return False
    if not _resources_cover(owner.resources, sub.resources):
        return False
    if not sub.resource_names:
        return not owner.resource_names
    return not owner.resource_names or set(sub.resource_names) <= set(owner.resource_names)


def _resources_cover(mine: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    if EVERYTHING in mine:
        return True
    for resource in wanted:
        if resource in mine:
            continue
        if "/" not in resource or f"*/{resource.split('/', 1)[1]}" not in mine:
            return False
    return True


def _url_covers(mine: str, wanted: str) -> bool:
    return mine == wanted or (mine.endswith("*") and wanted.startswith(mine.rstrip("*")))


def describe(rule: Rule) -> str:
    """A rule as kube's escalation message prints it, e.g. ``{APIGroups:["apps"], Resources:["deployments"],
    Verbs:["create"]}``."""
    def quoted(values: tuple[str, ...]) -> str:
        return "[" + " ".join(f'"{v}"' for v in values) + "]"

    if isinstance(rule, NonResourceRule):
        return f"{{NonResourceURLs:{quoted(rule.urls)}, Verbs:{quoted(rule.verbs)}}}"
    parts = [f"APIGroups:{quoted(rule.api_groups)}", f"Resources:{quoted(rule.resources)}"]
    if rule.resource_names:
        parts.append(f"ResourceNames:{quoted(rule.resource_names)}")
    parts.append(f"Verbs:{quoted(rule.verbs)}")
    return "{" + ", ".join(parts) + "}"
