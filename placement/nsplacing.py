"""Which namespace mapping applies to a space's namespace, and a desired entry and its object as a cluster gets them.

A namespace follows the ``namespaceMapping`` of the first EdgePlacement (by name) of its space that selects it
or objects in it and sets one, else its Space's ``spec.namespaceMapping`` (``PlacementEngine.namespace_mapping``),
so a namespace and all its objects land in one cluster namespace. The rule itself (rendering, validation) is
:mod:`spaces.nsmapping`'s.

On the wire (docs/sync-protocol.md) a mapped entry names the cluster object (``namespace``, or ``name`` for a
Namespace) and keeps the space's names in ``spaceNamespace`` / ``spaceName``, by which the syncer reports status
and Events back. The object's own namespace and the namespaces of the subjects of RoleBindings and
ClusterRoleBindings are rewritten the same way, and the namespaces upsync rules name. Never does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from spaces.nsmapping import MAPPING_FIELD, NamespaceMapping, name_problems, parse

NAMESPACES = "namespaces"
_PATTERN = re.compile(r"[*?\[]")  # an upsync rule's namespace glob (fnmatch), not a name
_BINDINGS = frozenset({("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io",
                                                                      "ClusterRoleBinding")})

Lookup = Callable[[str, str], NamespaceMapping | None]  # (space, namespace) -> a placement's mapping


class NamespacePlacing:
    def __init__(self, placement_mapping: Lookup, placements_map: Callable[[str], bool]) -> None:
        self._placement_mapping = placement_mapping
        self._placements_map = placements_map  # space -> whether any of its placements sets namespaceMapping
        self._space_defaults: dict[str, NamespaceMapping] = {}
        # Per space, the cluster namespace of each namespace found mapped elsewhere at the last look (``moved``).
        self._decided: dict[str, dict[str, str]] = {}

    def maps(self, space: str) -> bool:
        """Whether anything may map ``space``'s namespaces (else every answer here is the identity, found fast)."""
        return space in self._space_defaults or self._placements_map(space)

    def space_changed(self, space: str, obj: dict[str, Any] | None) -> bool:
        """A Space object (``space`` is the id it stands for) was written or deleted; True if its default changed."""
        spec = (obj or {}).get("spec")
        mapping = parse(spec.get(MAPPING_FIELD)) if isinstance(spec, dict) else None
        if self._space_defaults.get(space) == mapping:
            return False
        if mapping is None:
            del self._space_defaults[space]
        else:
            self._space_defaults[space] = mapping
        return True

    def cluster_namespace(self, space: str, namespace: str) -> str:
        """Where ``namespace`` of ``space`` lives in clusters ("" stays "": cluster-scoped)."""
        if not namespace or not self.maps(space):
            return namespace
        mapping = self._placement_mapping(space, namespace) or self._space_defaults.get(space)
        return namespace if mapping is None else mapping.cluster_namespace(space, namespace)

    def watches(self, space: str) -> bool:
        """Whether ``space``'s namespaces may map elsewhere now or did at the last look (``moved`` has work)."""
        return space in self._decided or self.maps(space)

    def moved(self, space: str, namespaces: Iterable[str]) -> set[str]:
        """Of ``namespaces`` (the space's placed ones) and those mapped elsewhere at the last look, the ones whose
        cluster namespace changed since: their mapping changed, or the placement deciding it (the first selecting
        them stopped, another began)."""
        before = self._decided.pop(space, {})
        now = {ns: mapped for ns in {*namespaces, *before} if (mapped := self.cluster_namespace(space, ns)) != ns}
        if now:
            self._decided[space] = now
        return {ns for ns in now.keys() | before.keys() if now.get(ns) != before.get(ns)}

    def space_namespaces(self, space: str, namespaces: Iterable[str]) -> dict[str, str]:
        """Of ``namespaces`` of ``space``, those mapped elsewhere: the space's name by the cluster's."""
        return {mapped: ns for ns in namespaces if (mapped := self.cluster_namespace(space, ns)) != ns}

    def upsync_rule(self, rule: dict[str, Any], namespaces: Iterable[str]) -> dict[str, Any]:
        """An upsync rule as the cluster gets it: the namespaces it names mapped (patterns stay as they are), and
        ``spaceNamespaces``, the space's name by the cluster's of those and of ``namespaces`` (the space's placed
        ones), by which the syncer sends objects up into the space's namespaces."""
        space = str(rule["space"])
        back = self.space_namespaces(space, namespaces)
        named = []
        for namespace in rule.get("namespaces") or []:
            mapped = namespace if _PATTERN.search(namespace) else self.cluster_namespace(space, namespace)
            named.append(mapped)
            if mapped != namespace:
                back[mapped] = namespace
        return rule if not back else {**rule, "namespaces": named, "spaceNamespaces": back}

    def problem(self, space: str, namespace: str) -> str | None:
        """Why ``namespace`` of ``space`` cannot be written to a cluster under its mapping (the name it renders is
        no namespace name: a long namespace under a template); None when it can."""
        mapped = self.cluster_namespace(space, namespace)
        if mapped == namespace:  # unmapped: a name the space's API server accepted
            return None
        problems = name_problems(mapped)
        return f"namespace {namespace} maps to {mapped!r}: {problems[0]}" if problems else None

    def entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The wire entry naming the cluster object, the space's names kept beside it when they differ."""
        space = str(entry["space"])
        if not self.maps(space):
            return entry
        if entry["resource"] == NAMESPACES and not entry.get("group"):
            mapped = self.cluster_namespace(space, entry["name"])
            return entry if mapped == entry["name"] else {**entry, "name": mapped, "spaceName": entry["name"]}
        mapped = self.cluster_namespace(space, entry.get("namespace") or "")
        if mapped == (entry.get("namespace") or ""):
            return entry
        return {**entry, "namespace": mapped, "spaceNamespace": entry["namespace"]}

    def object(self, space: str, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as the cluster gets it: its namespace (a Namespace's name) and its bindings' subjects mapped."""
        if not self.maps(space):
            return obj
        meta = obj.get("metadata") or {}
        out = obj
        if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
            mapped = self.cluster_namespace(space, str(meta.get("name") or ""))
            if mapped != meta.get("name"):
                out = {**obj, "metadata": {**meta, "name": mapped}}
        elif meta.get("namespace"):
            mapped = self.cluster_namespace(space, str(meta["namespace"]))
            if mapped != meta["namespace"]:
                out = {**obj, "metadata": {**meta, "namespace": mapped}}
        group = str(obj.get("apiVersion") or "").partition("/")[0]
        if (group, obj.get("kind")) in _BINDINGS and isinstance(obj.get("subjects"), list):
            subjects = [self._subject(space, s) for s in obj["subjects"]]
            if subjects != obj["subjects"]:
                out = {**out, "subjects": subjects}
        return out

    def _subject(self, space: str, subject: Any) -> Any:
        if not isinstance(subject, dict) or not isinstance(subject.get("namespace"), str):
            return subject
        mapped = self.cluster_namespace(space, subject["namespace"])
        return subject if mapped == subject["namespace"] else {**subject, "namespace": mapped}
