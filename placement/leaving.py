"""Leaving copies: objects a cluster keeps after it stopped being one of their destinations (make-before-break).

Owns only the bookkeeping of which (object, cluster) copies are held and what each cluster's desired set
therefore still lists: the held entries themselves and the Namespaces they are in. The engine consults it
so that a held copy stays in its cluster's desired set (a resync keeps it), its DELETE — and its
Namespace's — is not sent while it is held, and the cluster's reports on it still count. When a copy is
held and let go is decided by :mod:`placement.moves`. Pure: never does I/O.
"""

from __future__ import annotations

from placement.model import Change, DesiredEntry, ObjectRef
from placement.ordering import NAMESPACE_RESOURCE
from placement.records import NsKey, namespace_ref


class LeavingCopies:
    def __init__(self) -> None:
        self._by_target: dict[str, dict[ObjectRef, DesiredEntry]] = {}
        self._targets_of: dict[ObjectRef, set[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._targets_of)

    def hold(self, target: str, entry: DesiredEntry) -> None:
        self._by_target.setdefault(target, {})[entry.ref] = entry
        self._targets_of.setdefault(entry.ref, set()).add(target)

    def let_go(self, ref: ObjectRef, target: str) -> bool:
        """Stop holding ``target``'s copy; False when it was not held."""
        held = self._by_target.get(target)
        if held is None or held.pop(ref, None) is None:
            return False
        if not held:
            del self._by_target[target]
        targets = self._targets_of[ref]
        targets.discard(target)
        if not targets:
            del self._targets_of[ref]
        return True

    def holds(self, ref: ObjectRef, target: str) -> bool:
        return ref in self._by_target.get(target, {})

    def targets_of(self, ref: ObjectRef) -> set[str]:
        """The clusters keeping a leaving copy of ``ref`` (a copy)."""
        return set(self._targets_of.get(ref, ()))

    def pairs(self) -> list[tuple[ObjectRef, str]]:
        """Every held (object, cluster), in order."""
        return sorted((ref, target) for ref, targets in self._targets_of.items() for target in targets)

    def entries(self, target: str) -> list[DesiredEntry]:
        return list(self._by_target.get(target, {}).values())

    def namespaces(self, target: str) -> set[NsKey]:
        """The Namespaces ``target`` must keep for its held copies."""
        return {(ref.space, ref.namespace) for ref in self._by_target.get(target, {}) if ref.namespace}

    def hides(self, change: Change, target: str) -> bool:
        """Whether this change must not reach ``target`` now: the DELETE of a held copy, or of the
        Namespace a held copy is in."""
        if change.op != "delete" or target not in self._by_target:
            return False
        ref = change.entry.ref
        if ref.resource == NAMESPACE_RESOURCE and not ref.namespace:
            return (ref.space, ref.name) in self.namespaces(target)
        return self.holds(ref, target)

    def implicit_namespaces(self, target: str, listed: set[ObjectRef]) -> list[DesiredEntry]:
        """Namespace entries the held copies of ``target`` need that ``listed`` lacks."""
        return [DesiredEntry(namespace_ref(ns), "namespace", True) for ns in sorted(self.namespaces(target))
                if namespace_ref(ns) not in listed]
