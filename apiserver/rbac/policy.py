"""Every space's RBAC objects in memory, and what they grant an identity.

Roles, ClusterRoles and their bindings are read from the store at startup and kept current from the watch
bus, so a request's authorization costs no SQL. What an identity holds in one namespace of a space is
computed once and kept until that space's RBAC objects change. ClusterRoles with an ``aggregationRule`` hold
the rules of the ClusterRoles their selectors match, evaluated here rather than copied into the object by a
controller: authorization sees an aggregation the moment a labelled role is written.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apimachinery.selectors import LabelSelector, label_selector_from_object
from apiserver.access import NonResourceRule, ResourceRule
from apiserver.identity import Identity
from apiserver.rbac.rules import Rule, rules_of
from apiserver.sharedtables import ContentPool
from apiserver.store import LogRow
from apiserver.watch import Entry

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES = f"roles.{RBAC_GROUP}"
CLUSTER_ROLES = f"clusterroles.{RBAC_GROUP}"
ROLE_BINDINGS = f"rolebindings.{RBAC_GROUP}"
CLUSTER_ROLE_BINDINGS = f"clusterrolebindings.{RBAC_GROUP}"
RESOURCES = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
MAX_CACHED = 4096  # identities x namespaces remembered per space before the memo starts over


@dataclass(frozen=True, slots=True)
class Grant:
    """Rules one binding gives, and how to say so (kube's ``RBAC: allowed by …`` reason)."""

    rules: tuple[Rule, ...]
    via: str


@dataclass(frozen=True, slots=True, weakref_slot=True)
class _ClusterRole:
    rules: tuple[Rule, ...]
    labels: dict[str, str]
    selectors: tuple[LabelSelector, ...] | None  # None: not aggregated


@dataclass(frozen=True, slots=True)
class _Binding:
    kind: str  # RoleBinding | ClusterRoleBinding
    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[tuple[str, str, str], ...]  # (kind, name, namespace)

    def binds(self, who: Identity) -> str | None:
        """How this binding names ``who`` (``User "alice"``), or None."""
        for kind, name, namespace in self.subjects:
            if kind == "User" and name == who.name:
                return f'User "{name}"'
            if kind == "Group" and name in who.groups:
                return f'Group "{name}"'
            if kind == "ServiceAccount" and who.name == f"system:serviceaccount:{namespace}:{name}":
                return f'ServiceAccount "{namespace}/{name}"'
        return None


class _SpacePolicy:
    """One space's roles and bindings, and what they were found to grant (memos, emptied on every change).

    Every space holds the same default roles and bindings: spaces whose RBAC objects are alike share one record
    (:meth:`PolicyIndex._shared`), memos included, so that 10,000 spaces cost one record, not 10,000. A shared
    record never changes: a change to one space's objects gives that space a record of its own."""

    __slots__ = ("__weakref__", "bindings", "cluster_roles", "effective", "granted", "roles", "shared")

    def __init__(self, copied: _SpacePolicy | None = None) -> None:
        self.cluster_roles: dict[str, _ClusterRole] = dict(copied.cluster_roles) if copied else {}
        self.roles: dict[tuple[str, str], tuple[Rule, ...]] = dict(copied.roles) if copied else {}
        # (kind, namespace, name)
        self.bindings: dict[tuple[str, str, str], _Binding] = dict(copied.bindings) if copied else {}
        self.effective: dict[str, tuple[Rule, ...]] = {}  # ClusterRole rules, aggregation done
        self.granted: dict[tuple[str, tuple[str, ...], str], tuple[Grant, ...]] = {}
        self.shared = False

    def changed(self) -> None:
        self.effective.clear()
        self.granted.clear()

    def size(self) -> int:
        return len(self.cluster_roles) + len(self.roles) + len(self.bindings)

    def content(self) -> tuple[frozenset[Any], ...]:
        """What makes two records alike. ClusterRole records are shared by content already (the index's
        ``_roles_by_content``), so their identity stands for their content; the shared record holds them alive
        for as long as its key is in use."""
        return (frozenset((name, id(role)) for name, role in self.cluster_roles.items()),
                frozenset(self.roles.items()), frozenset(self.bindings.items()))


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _selectors(obj: dict[str, Any]) -> tuple[LabelSelector, ...] | None:
    rule = obj.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    out = []
    for raw in rule.get("clusterRoleSelectors") or ():
        if isinstance(raw, dict):
            try:
                out.append(label_selector_from_object(raw))
            except StatusError:  # validation refuses bad selectors; one stored before that selects nothing
                continue
    return tuple(out)


def _binding(kind: str, obj: dict[str, Any]) -> _Binding:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
    subjects = tuple((str(s.get("kind") or ""), str(s.get("name") or ""), str(s.get("namespace") or ""))
                     for s in obj.get("subjects") or () if isinstance(s, dict))
    return _Binding(kind, str(meta.get("name") or ""), str(meta.get("namespace") or ""),
                    str(ref.get("kind") or ""), str(ref.get("name") or ""), subjects)


class PolicyIndex:
    """Roles and bindings of every space, and the grants they make."""

    def __init__(self) -> None:
        self._spaces: dict[str, _SpacePolicy] = {}
        # Every space holds a copy of each default ClusterRole: identical roles share one record, compiled once
        # (at startup, once per distinct role rather than once per space), until a space changes its copy.
        self._roles_by_content: weakref.WeakValueDictionary[bytes, _ClusterRole] = weakref.WeakValueDictionary()
        # Likewise whole spaces' records (``_SpacePolicy``), by content; a space with many RBAC objects keeps one of
        # its own, changed in place (each write would copy them all).
        self._policies: ContentPool[_SpacePolicy] = ContentPool()

    def load(self, list_resource: Callable[[str], Iterable[LogRow]]) -> None:
        """Read every space's RBAC objects (blocking; at startup, before the bus delivers commits). Each space's
        record is built in place and shared once complete, not copied at every row."""
        for resource in RESOURCES:
            for row in list_resource(resource):
                self._apply(row, orjson.loads(row.value), share=False)
        for space, policy in self._spaces.items():
            self._spaces[space] = self._shared(policy)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if entry.row.key.resource in RESOURCES:
                self._apply(entry.row, None if entry.row.deleted else entry.obj())

    def _apply(self, row: LogRow, obj: dict[str, Any] | None, share: bool = True) -> None:
        key = row.key
        found = self._spaces.get(key.space)
        if found is None or found.shared:
            policy = _SpacePolicy(found)
        else:
            policy = found
            policy.changed()
        if key.resource == CLUSTER_ROLES:
            if obj is None:
                policy.cluster_roles.pop(key.name, None)
            else:
                policy.cluster_roles[key.name] = self._cluster_role(obj)
        elif key.resource == ROLES:
            if obj is None:
                policy.roles.pop((key.namespace, key.name), None)
            else:
                policy.roles[(key.namespace, key.name)] = rules_of(obj)
        else:
            kind = "ClusterRoleBinding" if key.resource == CLUSTER_ROLE_BINDINGS else "RoleBinding"
            if obj is None:
                policy.bindings.pop((kind, key.namespace, key.name), None)
            else:
                policy.bindings[(kind, key.namespace, key.name)] = _binding(kind, obj)
        if not policy.size():
            self._spaces.pop(key.space, None)
        else:
            self._spaces[key.space] = self._shared(policy) if share else policy

    def _shared(self, policy: _SpacePolicy) -> _SpacePolicy:
        """The record alike spaces share for ``policy``'s content (``policy`` itself, if it is the first); a
        large one stays its space's own."""
        return self._policies.share(policy, policy.size(), policy.content)

    def _cluster_role(self, obj: dict[str, Any]) -> _ClusterRole:
        content = orjson.dumps([obj.get("rules"), (obj.get("metadata") or {}).get("labels"),
                                obj.get("aggregationRule")])
        role = self._roles_by_content.get(content)
        if role is None:
            role = _ClusterRole(rules_of(obj), _labels(obj), _selectors(obj))
            self._roles_by_content[content] = role
        return role

    # --- queries ---------------------------------------------------------------------------------

    def has_cluster_role(self, space: str, name: str) -> bool:
        policy = self._spaces.get(space)
        return policy is not None and name in policy.cluster_roles

    def has_cluster_role_binding(self, space: str, name: str) -> bool:
        policy = self._spaces.get(space)
        return policy is not None and ("ClusterRoleBinding", "", name) in policy.bindings

    def role_rules(self, space: str, kind: str, namespace: str, name: str) -> tuple[Rule, ...] | None:
        """The rules of a role a binding refers to (aggregation done); None if there is no such role."""
        policy = self._spaces.get(space)
        if policy is None:
            return None
        if kind == "ClusterRole":
            return self._cluster_role_rules(policy, name) if name in policy.cluster_roles else None
        return policy.roles.get((namespace, name)) if kind == "Role" else None

    def grants(self, space: str, who: Identity, namespace: str) -> tuple[Grant, ...]:
        """What the bindings in ``space`` give ``who`` in ``namespace`` ("": cluster-wide bindings only)."""
        policy = self._spaces.get(space)
        if policy is None:
            return ()
        memo_key = (who.name, who.groups, namespace)
        found = policy.granted.get(memo_key)
        if found is not None:
            return found
        grants: list[Grant] = []
        for binding in policy.bindings.values():
            if binding.kind == "RoleBinding" and binding.namespace != namespace:
                continue
            subject = binding.binds(who)
            if subject is None:
                continue
            rules = self.role_rules(space, binding.role_kind, binding.namespace, binding.role_name) or ()
            where = f' in namespace "{binding.namespace}"' if binding.namespace else ""
            grants.append(Grant(rules, f'{binding.kind} "{binding.name}"{where} of {binding.role_kind} '
                                       f'"{binding.role_name}" to {subject}'))
        result = tuple(grants)
        if len(policy.granted) >= MAX_CACHED:
            policy.granted.clear()
        policy.granted[memo_key] = result
        return result

    def _cluster_role_rules(self, policy: _SpacePolicy, name: str, seen: frozenset[str] = frozenset()) -> \
            tuple[Rule, ...]:
        cached = policy.effective.get(name)
        if cached is not None:
            return cached
        role = policy.cluster_roles.get(name)
        if role is None:
            return ()
        if role.selectors is None:
            rules = role.rules
        else:
            gathered: list[Rule] = []
            for other_name in sorted(policy.cluster_roles):
                other = policy.cluster_roles[other_name]
                if other_name == name or other_name in seen:
                    continue
                if any(selector.matches(other.labels) for selector in role.selectors):
                    gathered.extend(self._cluster_role_rules(policy, other_name, seen | {name}))
            rules = tuple(dict.fromkeys(gathered))  # one copy of a rule that several aggregated roles hold
        if not seen:
            policy.effective[name] = rules
        return rules


def flatten(grants: Iterable[Grant]) -> tuple[tuple[ResourceRule, ...], tuple[NonResourceRule, ...]]:
    """Every rule of ``grants``, resource and non-resource apart (SelfSubjectRulesReview's shape)."""
    resource: list[ResourceRule] = []
    non_resource: list[NonResourceRule] = []
    for grant in grants:
        for rule in grant.rules:
            (non_resource if isinstance(rule, NonResourceRule) else resource).append(rule)  # type: ignore[arg-type]
    return tuple(dict.fromkeys(resource)), tuple(dict.fromkeys(non_resource))
