"""Conflicts: two spaces sending different content for one cluster object to one cluster.

A cluster object is named by its resource, namespace and name; objects of the same name in two workload
spaces are one object in a cluster that both place them on, unless their namespaces map to different cluster
namespaces (``namespaceMapping``, :mod:`placement.nsplacing`). When their copies for that cluster are equal
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

from placement.model import ObjectRef

Ident = tuple[str, str, str]  # (resource, namespace, name): one object in a cluster
MAX_FIELDS = 8  # differing fields named per conflict
_DEPTH = 3  # how deep differing fields are named (``spec.template.spec``), beyond that the subtree differs


@dataclass(frozen=True)
class Conflict:
    """On one cluster, the copy that is applied (``winner``) and one other space's differing copy."""

    target: str
    winner: ObjectRef
    loser: ObjectRef
    fields: tuple[str, ...]

    def describe(self) -> str:
        where = f"{self.winner.namespace}/{self.winner.name}" if self.winner.namespace else self.winner.name
        return (f"{self.winner.resource} {where} on {self.target}: space {self.winner.space} wins, space "
                f"{self.loser.space} differs at {', '.join(self.fields)}")


def ident_of(ref: ObjectRef) -> Ident:
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
        # (space, namespace) -> the cluster namespace (namespaceMapping): objects of one name in two spaces are one
        # cluster object only where their namespaces map to one.
        self._cluster_namespace = cluster_namespace
        # Copies are compared as sent: two spaces' equal bindings whose subjects map apart differ in the cluster.
        self._as_sent = as_sent
        self._refs: dict[Ident, set[ObjectRef]] = {}
        self._created: dict[ObjectRef, str] = {}
        self._due: set[Ident] = set()
        self._lost: dict[ObjectRef, dict[str, Conflict]] = {}  # loser -> target -> its conflict
        self._won: dict[ObjectRef, set[str]] = {}  # winner -> targets where some other copy lost to it

    # --- inputs -------------------------------------------------------------------------------

    def object_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        ident = ident_of(ref)
        refs = self._refs.setdefault(ident, set())
        if obj is None:
            refs.discard(ref)
            self._created.pop(ref, None)
        else:
            refs.add(ref)
            self._created[ref] = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
        if len(refs) > 1 or self._lost.get(ref) or self._won.get(ref):
            self._due.add(ident)
        if not refs:
            del self._refs[ident]

    def selection_changed(self, refs: Iterable[ObjectRef]) -> None:
        """These objects' destinations may have changed."""
        for ref in refs:
            if len(self._refs.get(ident_of(ref), ())) > 1 or ref in self._lost or ref in self._won:
                self._due.add(ident_of(ref))

    def placements_changed(self) -> None:
        """Placements changed or went: the objects in a conflict may have lost their destinations without any
        placement selecting them now (conflicts are few, so all of them are looked at again)."""
        self._due.update(ident_of(ref) for ref in (*self._lost, *self._won))

    # --- outputs ------------------------------------------------------------------------------

    def lost(self, ref: ObjectRef, target: str) -> Conflict | None:
        """The conflict ``ref`` lost on ``target``, if it did."""
        return self._lost.get(ref, {}).get(target)

    def of(self, ref: ObjectRef) -> list[Conflict]:
        """Every conflict ``ref`` is in, won or lost, by cluster."""
        out = list(self._lost.get(ref, {}).values())
        for target in self._won.get(ref, ()):
            out += [c for other in self._refs.get(ident_of(ref), ()) if (c := self.lost(other, target))
                    and c.winner == ref]
        return sorted(out, key=lambda c: (c.target, c.loser.space))

    def all(self) -> list[Conflict]:
        return sorted((c for per in self._lost.values() for c in per.values()),
                      key=lambda c: (c.target, c.winner.resource, c.winner.namespace, c.winner.name, c.loser.space))

    # --- recomputing --------------------------------------------------------------------------

    async def recompute(self, destinations: Callable[[ObjectRef], list[str]],
                        copy: Callable[[ObjectRef, str], Awaitable[dict[str, Any] | None]]) \
            -> tuple[set[ObjectRef], dict[str, set[ObjectRef]]]:
        """Look again at the names due; returns the objects whose conflicts changed and, per cluster, the
        objects it must be sent again (their conflict there started or ended)."""
        due, self._due = self._due, set()
        changed: set[ObjectRef] = set()
        resend: dict[str, set[ObjectRef]] = {}
        for ident in due:
            refs = sorted(self._refs.get(ident, ()), key=lambda r: (self._created.get(r, ""), r.space))
            # Conflicts are few: those of this name include objects deleted since (no longer in ``refs``).
            before: dict[tuple[ObjectRef, str], Conflict | None] = {
                (r, t): c for r, per in self._lost.items() if ident_of(r) == ident for t, c in per.items()}
            before |= {(r, t): None for r, per in self._won.items() if ident_of(r) == ident for t in per}
            for ref in {r for r, _ in before} | set(refs):
                self._lost.pop(ref, None)
                self._won.pop(ref, None)
            after: dict[tuple[ObjectRef, str], Conflict | None] = {}
            holders: dict[tuple[str, str], list[ObjectRef]] = {}
            for ref in refs:
                where = self._cluster_namespace(ref.space, ref.namespace)
                for target in destinations(ref):
                    holders.setdefault((target, where), []).append(ref)
            for (target, _where), placed in holders.items():
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
                        conflict = Conflict(target, winner, ref, tuple(fields[:MAX_FIELDS]))
                        self._lost.setdefault(ref, {})[target] = conflict
                        self._won.setdefault(winner, set()).add(target)
                        after[(ref, target)] = conflict
                        after[(winner, target)] = None
            if after != before:
                for ref, target in after.keys() ^ before.keys() | {k for k in after if after[k] != before.get(k)}:
                    changed.add(ref)
                    resend.setdefault(target, set()).update(
                        r for (t, _where), placed in holders.items() if t == target for r in placed)
                    resend[target].add(ref)
        return changed, resend


def _compared(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {**{k: v for k, v in obj.items() if k != "metadata"},
            "metadata": {k: meta.get(k) for k in ("labels", "annotations") if meta.get(k)}}
