"""Conflicts: two spaces sending different content for one cluster object to one cluster.

A cluster object is named by its resource, *cluster* namespace and name: the namespace after the space's
``namespaceMapping`` (:mod:`placement.nsplacing`; a Namespace's own name likewise). Objects of one name in two
workload spaces are one cluster object where their namespaces land in one cluster namespace, whatever the
spaces call it (``app`` mapped to ``shared`` meets another space's unmapped ``shared``); where they map apart,
they are two. When their copies for that cluster are equal
both are sent (the syncer holds the object while either wants it). When they differ, the rule is: **the
object created first wins** (its ``metadata.creationTimestamp``, then the space name), so an object that
already runs somewhere is never taken over by a newcomer. The others are *held* on that cluster (the syncer
keeps the winner's copy while any of them wants the object), and every EdgePlacement involved gets a
``Conflict`` condition; the REST API and Events name the spaces, the cluster and the fields that differ.

Conflicts are looked for only among names that more than one space uses, so a fleet without such names pays
nothing. Never does I/O: the caller hands it each cluster's copies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.builtin.strategies.core import NAMESPACE_NAME_LABEL
from placement.model import ObjectRef
from placement.ordering import NAMESPACE_RESOURCE

Ident = tuple[str, str, str]  # (resource, cluster namespace, name): one object in a cluster
MAX_FIELDS = 8  # differing fields named per conflict
_DEPTH = 3  # how deep differing fields are named (``spec.template.spec``), beyond that the subtree differs


@dataclass(frozen=True)
class Conflict:
    """On one cluster, the copy that is applied (``winner``) and one other space's differing copy."""

    target: str
    winner: ObjectRef
    loser: ObjectRef
    fields: tuple[str, ...]
    ident: Ident  # the cluster object both name

    def describe(self) -> str:
        resource, namespace, name = self.ident
        where = f"{namespace}/{name}" if namespace else name
        return (f"{resource} {where} on {self.target}: space {self.winner.space}{_own(self.winner, where)} wins, "
                f"space {self.loser.space}{_own(self.loser, where)} differs at {', '.join(self.fields)}")


def _own(ref: ObjectRef, where: str) -> str:
    """The space's own name of the object, when its namespace is mapped to the cluster one (" (as app/config)")."""
    own = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
    return "" if own == where else f" (as {own})"


def ident_of(ref: ObjectRef) -> Ident:
    """The object's name in its space, which is its cluster name where its namespace is not mapped."""
    return ref.resource, ref.namespace, ref.name


def differing_fields(a: Any, b: Any, prefix: str = "", depth: int = _DEPTH) -> list[str]:
    """Dotted paths where two copies differ (a whole subtree below ``depth``); metadata counts by its labels
    and annotations, the fields clusters get."""
    if a == b:
        return []
    if not isinstance(a, dict) or not isinstance(b, dict) or depth == 0:
        return [prefix or "."]
    out = []
    for key in sorted(set(a) | set(b)):
        out += differing_fields(a.get(key), b.get(key), f"{prefix}.{key}" if prefix else str(key), depth - 1)
    return out


AsSent = Callable[[str, dict[str, Any]], dict[str, Any]]  # (space, copy) -> the copy as the cluster gets it


def _unchanged(_space: str, obj: dict[str, Any]) -> dict[str, Any]:
    return obj


class Conflicts:
    def __init__(self, cluster_namespace: Callable[[str, str], str], as_sent: AsSent = _unchanged) -> None:
        # (space, namespace) -> the cluster namespace (namespaceMapping), read when an object is seen and when
        # ``remap`` says its namespace's mapping changed.
        self._cluster_namespace = cluster_namespace
        # Copies are compared as sent: two spaces' equal bindings whose subjects map apart differ in the cluster.
        self._as_sent = as_sent
        self._refs: dict[Ident, set[ObjectRef]] = {}
        self._created: dict[ObjectRef, str] = {}
        self._mapped: dict[ObjectRef, Ident] = {}  # objects whose cluster name is not their own (``ident_of``)
        # Names to look at again, with the objects that made them due: only those can change the name's conflicts.
        self._due: dict[Ident, set[ObjectRef]] = {}
        self._lost: dict[ObjectRef, dict[str, Conflict]] = {}  # loser -> target -> its conflict
        self._won: dict[ObjectRef, set[str]] = {}  # winner -> targets where some other copy lost to it

    def ident(self, ref: ObjectRef) -> Ident:
        """The cluster object ``ref`` is (as last seen or remapped)."""
        return self._mapped.get(ref) or ident_of(ref)

    def _cluster_ident(self, ref: ObjectRef) -> Ident:
        if ref.resource == NAMESPACE_RESOURCE:
            return ref.resource, "", self._cluster_namespace(ref.space, ref.name)
        return ref.resource, self._cluster_namespace(ref.space, ref.namespace) if ref.namespace else "", ref.name

    # --- inputs -------------------------------------------------------------------------------

    def object_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        if obj is None:
            ident = self.ident(ref)
            self._created.pop(ref, None)
            if ref not in self._lost and ref not in self._won:
                self._mapped.pop(ref, None)  # else ``recompute`` still finds its conflicts under it
        else:
            self._created[ref] = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
            ident = self._place(ref)
        refs = self._refs.get(ident, set())
        if obj is None:
            refs.discard(ref)
        if len(refs) > 1 or self._lost.get(ref) or self._won.get(ref):
            self._due.setdefault(ident, set()).add(ref)
        if not refs:
            self._refs.pop(ident, None)

    def remap(self, moved: Mapping[str, set[str]]) -> None:
        """The cluster namespace of these namespaces (by space) changed: their objects are other cluster objects.
        One pass over the objects, however many spaces moved."""
        for ref in [r for r in self._created if r.space in moved and
                    (r.name if r.resource == NAMESPACE_RESOURCE else r.namespace) in moved[r.space]]:
            before = self.ident(ref)
            after = self._place(ref)
            if after != before and (ref in self._lost or ref in self._won):
                self._due.setdefault(after, set()).add(ref)  # where the conflicts it was in are let go

    def _place(self, ref: ObjectRef) -> Ident:
        """File ``ref`` under its cluster object now; the name is due when others share it."""
        before, ident = self.ident(ref), self._cluster_ident(ref)
        if ident != before:
            old = self._refs.get(before)
            if old is not None:
                old.discard(ref)
                if not old:
                    del self._refs[before]
                elif len(old) > 1 or any(r in self._lost or r in self._won for r in old):
                    self._due.setdefault(before, set()).update(old | {ref})
        if ident == ident_of(ref):
            self._mapped.pop(ref, None)
        else:
            self._mapped[ref] = ident
        refs = self._refs.setdefault(ident, set())
        refs.add(ref)
        if len(refs) > 1:
            self._due.setdefault(ident, set()).add(ref)
        return ident

    def selection_changed(self, refs: Iterable[ObjectRef]) -> None:
        """These objects' destinations may have changed."""
        for ref in refs:
            ident = self.ident(ref)
            if len(self._refs.get(ident, ())) > 1 or ref in self._lost or ref in self._won:
                self._due.setdefault(ident, set()).add(ref)

    def placements_changed(self) -> None:
        """Placements changed or went: the objects in a conflict may have lost their destinations without any
        placement selecting them now (conflicts are few, so all of them are looked at again)."""
        for ref in (*self._lost, *self._won):
            self._due.setdefault(self.ident(ref), set()).add(ref)

    # --- outputs ------------------------------------------------------------------------------

    def lost(self, ref: ObjectRef, target: str) -> Conflict | None:
        """The conflict ``ref`` lost on ``target``, if it did."""
        return self._lost.get(ref, {}).get(target)

    def losers(self, ref: ObjectRef) -> frozenset[str]:
        """The clusters where ``ref`` lost a conflict."""
        return frozenset(self._lost.get(ref, ()))

    def of(self, ref: ObjectRef) -> list[Conflict]:
        """Every conflict ``ref`` is in, won or lost, by cluster."""
        out = list(self._lost.get(ref, {}).values())
        for target in self._won.get(ref, ()):
            out += [c for other in self._refs.get(self.ident(ref), ()) if (c := self.lost(other, target))
                    and c.winner == ref]
        return sorted(out, key=lambda c: (c.target, c.loser.space))

    def all(self) -> list[Conflict]:
        return sorted((c for per in self._lost.values() for c in per.values()),
                      key=lambda c: (c.target, *c.ident, c.loser.space))

    # --- recomputing --------------------------------------------------------------------------

    async def recompute(self, destinations: Callable[[ObjectRef], list[str]],
                        copy: Callable[[ObjectRef, str], Awaitable[dict[str, Any] | None]]) \
            -> tuple[set[ObjectRef], dict[str, set[ObjectRef]]]:
        """Look again at the names due; returns the objects whose conflicts changed and, per cluster, the
        objects it must be sent again (their conflict there started or ended)."""
        due, self._due = self._due, {}
        changed: set[ObjectRef] = set()
        resend: dict[str, set[ObjectRef]] = {}
        for ident, causes in due.items():
            if not any(r in self._lost or r in self._won or destinations(r) for r in causes):
                # Objects placed nowhere and in no conflict (every space's ``default`` Namespace, say) change no
                # one's copies: the name's thousand other objects are not looked at again.
                continue
            refs = sorted(self._refs.get(ident, ()), key=lambda r: (self._created.get(r, ""), r.space))
            # Conflicts are few: those of this name include objects deleted since (no longer in ``refs``).
            before: dict[tuple[ObjectRef, str], Conflict | None] = {
                (r, t): c for r, per in self._lost.items() if self.ident(r) == ident for t, c in per.items()}
            before |= {(r, t): None for r, per in self._won.items() if self.ident(r) == ident for t in per}
            for ref in {r for r, _ in before} | set(refs):
                self._lost.pop(ref, None)
                self._won.pop(ref, None)
                if ref not in self._created:
                    self._mapped.pop(ref, None)  # deleted: nothing more to find under its cluster name
            after: dict[tuple[ObjectRef, str], Conflict | None] = {}
            holders: dict[str, list[ObjectRef]] = {}
            for ref in refs:
                for target in destinations(ref):
                    holders.setdefault(target, []).append(ref)
            for target, placed in holders.items():
                if len(placed) < 2:
                    continue
                winner, winning = None, None
                for ref in placed:
                    content = await copy(ref, target)
                    if content is None:
                        continue
                    content = self._as_sent(ref.space, content)
                    if winner is None:
                        winner, winning = ref, content
                        continue
                    fields = differing_fields(_compared(winning), _compared(content))
                    if fields:
                        conflict = Conflict(target, winner, ref, tuple(fields[:MAX_FIELDS]), ident)
                        self._lost.setdefault(ref, {})[target] = conflict
                        self._won.setdefault(winner, set()).add(target)
                        after[(ref, target)] = conflict
                        after[(winner, target)] = None
            if after != before:
                for ref, target in after.keys() ^ before.keys() | {k for k in after if after[k] != before.get(k)}:
                    changed.add(ref)
                    resend.setdefault(target, set()).update(holders.get(target, [ref]))
        return changed, resend


def _compared(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    # A Namespace's name as kube labels it is the space's name; the cluster's name (one for both) is what counts.
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != NAMESPACE_NAME_LABEL}
    compared = {k: v for k, v in (("labels", labels), ("annotations", meta.get("annotations"))) if v}
    return {**{k: v for k, v in obj.items() if k != "metadata"}, "metadata": compared}
