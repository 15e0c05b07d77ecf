"""No one grants more than they hold: the checks kube's RBAC storage makes on writes of roles and bindings.

A Role or ClusterRole may be written by someone who holds every rule in it (in that namespace, or cluster-wide
for a ClusterRole) or who may ``escalate`` on it; an ``aggregationRule`` may gather any rule, so it needs
everything. A RoleBinding or ClusterRoleBinding may be written by someone who holds every rule of the role it
refers to, or who may ``bind`` that role. Writes that change none of what grants (rules, aggregation, labels,
role reference, subjects) pass, so that finalizer and owner updates keep working. The server's own writes
(no user) and privileged identities pass.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import StatusError
from apiserver.access import EVERYTHING, Attributes, NonResourceRule, ResourceRule
from apiserver.identity import Identity
from apiserver.rbac.authorizer import RBACAuthorizer
from apiserver.rbac.policy import RBAC_GROUP, PolicyIndex
from apiserver.rbac.rules import Rule, describe, rules_of, uncovered
from apiserver.resourcetypes import ResourceType
from apiserver.writeoptions import WriteOptions

ROLES = frozenset({"roles", "clusterroles"})
BINDINGS = frozenset({"rolebindings", "clusterrolebindings"})
EVERY_RULE: tuple[Rule, ...] = (ResourceRule((EVERYTHING,), (EVERYTHING,), (EVERYTHING,)),
                                NonResourceRule((EVERYTHING,), (EVERYTHING,)))


def _granting(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What in a role or binding grants anything."""
    return (obj.get("rules"), obj.get("aggregationRule"), (obj.get("metadata") or {}).get("labels"),
            obj.get("roleRef"), obj.get("subjects"))


class EscalationCheck:
    """An admission step (``Objects.admit``'s signature) for the four RBAC kinds."""

    def __init__(self, policy: PolicyIndex, authorizer: RBACAuthorizer) -> None:
        self.policy = policy
        self.authorizer = authorizer

    async def __call__(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        who = opts.user
        if rtype.group != RBAC_GROUP or subresource or obj is None or who is None or self.authorizer.privileged(who):
            return
        if old is not None and _granting(obj) == _granting(old):
            return
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if rtype.plural in ROLES:
            if self._may(space, who, "escalate", rtype.plural, namespace, name):
                return
            requested = rules_of(obj)
            if isinstance(obj.get("aggregationRule"), dict):
                requested += EVERY_RULE
        elif rtype.plural in BINDINGS:
            ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
            kind, role = str(ref.get("kind") or ""), str(ref.get("name") or "")
            if self._may(space, who, "bind", "roles" if kind == "Role" else "clusterroles", namespace, role):
                return
            found = self.policy.role_rules(space, kind, namespace, role)
            if found is None:
                plural = "roles" if kind == "Role" else "clusterroles"
                raise StatusError(403, "Forbidden", f'{rtype.plural}.{RBAC_GROUP} "{name}" is forbidden: '
                                  f'{plural}.{RBAC_GROUP} "{role}" not found', name=name, group=RBAC_GROUP,
                                  kind=rtype.plural)
            requested = found
        else:
            return
        held = [rule for grant in self.policy.grants(space, who, namespace) for rule in grant.rules]
        missing = uncovered(held, requested)
        if missing:
            groups = " ".join(f'"{g}"' for g in who.groups)
            raise StatusError(403, "Forbidden", f'{rtype.plural}.{RBAC_GROUP} "{name}" is forbidden: user '
                              f'"{who.name}" (groups=[{groups}]) is attempting to grant RBAC permissions not '
                              "currently held:\n" + "\n".join(describe(rule) for rule in missing),
                              name=name, group=RBAC_GROUP, kind=rtype.plural)

    def _may(self, space: str, who: Identity, verb: str, plural: str, namespace: str, name: str) -> bool:
        return self.authorizer.authorize(space, who, Attributes(verb=verb, namespace=namespace, group=RBAC_GROUP,
                                                                resource=plural, name=name)).allowed
