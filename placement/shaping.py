"""Per-destination content on the hub: which objects are customized, with what, and what each cluster gets.

Keeps the Customizers of the workload spaces and, per object that names one or asks for parameter expansion,
what it asks. For one (object, cluster) it computes the cluster's copy with :mod:`placement.customize`,
from the definitions of the cluster's Location (labels, then annotations; spacehub adds the SyncTarget's
labels last), and a content revision that changes whenever that copy can: the object's revision, the
Customizer's resourceVersion and, for objects whose copy depends on parameters, a digest of the cluster's
definitions. Outcomes are cached per those inputs. A copy that cannot be made is a problem of that
(object, cluster): the caller keeps the cluster's previous copy, the EdgePlacement says so in a
condition and the object's story has an Event.

Never does I/O: callers hand it objects, Customizers and the inventory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from placement.customize import CustomizeError, customize, customizer_ref, needs_shaping, wants_expansion
from placement.model import ObjectRef

CustomizerKey = tuple[str, str, str]  # (space, namespace, name)
_MAX_OUTCOMES = 20_000


@dataclass(frozen=True)
class Shaping:
    """What one object asks: a Customizer, parameter expansion, or an annotation that names nothing."""

    customizer: CustomizerKey | None
    expand: bool
    problem: str | None = None


@dataclass(frozen=True)
class Outcome:
    """One cluster's copy and its revision, or why it cannot be made (then ``obj`` is None)."""

    obj: dict[str, Any] | None
    revision: str
    error: str | None = None
    unknown_keys: frozenset[str] = frozenset()


@dataclass
class Problems:
    """Per object, the clusters whose copy failed (with why) and those whose copy used unknown parameters."""

    errors: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, frozenset[str]] = field(default_factory=dict)


class Shaper:
    def __init__(self, target_locations: Callable[[str], list[str]],
                 location: Callable[[str], Mapping[str, Any] | None],
                 sync_target: Callable[[str], Mapping[str, Any] | None]) -> None:
        self._target_locations = target_locations
        self._location = location
        self._sync_target = sync_target
        self._customizers: dict[CustomizerKey, dict[str, Any]] = {}
        self._shaping: dict[ObjectRef, Shaping] = {}
        self._users: dict[CustomizerKey, set[ObjectRef]] = {}
        self._outcomes: dict[tuple[ObjectRef, str], tuple[tuple[str, ...], Outcome]] = {}
        self._definitions_digest: dict[str, str] = {}  # per cluster, as last computed
        self.problems: dict[ObjectRef, Problems] = {}

    # --- inputs -------------------------------------------------------------------------------

    def object_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        """Learn what an object (None: gone) asks."""
        old = self._shaping.pop(ref, None)
        if old is not None and old.customizer is not None:
            users = self._users.get(old.customizer)
            if users is not None:
                users.discard(ref)
                if not users:
                    del self._users[old.customizer]
        if obj is None or not needs_shaping(obj):
            if old is not None:
                self.problems.pop(ref, None)
                self._forget_outcomes(ref)
            return
        try:
            named = customizer_ref(obj)
            problem = None
        except CustomizeError as exc:
            named, problem = None, str(exc)
        key = (ref.space, *named) if named is not None else None
        self._shaping[ref] = Shaping(key, wants_expansion(obj.get("metadata") or {}), problem)
        if key is not None:
            self._users.setdefault(key, set()).add(ref)

    def customizer_changed(self, key: CustomizerKey, obj: dict[str, Any] | None) -> set[ObjectRef]:
        """Learn a Customizer (None: gone); returns the objects that name it (their copies change)."""
        if obj is None:
            self._customizers.pop(key, None)
        else:
            self._customizers[key] = obj
        return set(self._users.get(key, ()))

    def definitions_changed(self, targets: Iterable[str]) -> set[str]:
        """Of ``targets`` (their Location or SyncTarget changed), those whose definitions now differ."""
        changed = set()
        for target in targets:
            digest = _digest(self.definitions(target))
            if self._definitions_digest.get(target) != digest:
                if target in self._definitions_digest:
                    changed.add(target)
                self._definitions_digest[target] = digest
        return changed

    def forget_space(self, space: str) -> None:
        for ref in [r for r in self._shaping if r.space == space]:
            self.object_changed(ref, None)
        self._customizers = {k: v for k, v in self._customizers.items() if k[0] != space}

    # --- what objects ask ---------------------------------------------------------------------

    def shapes(self, ref: ObjectRef) -> bool:
        return ref in self._shaping

    def shaped_objects(self) -> list[ObjectRef]:
        return list(self._shaping)

    def depends_on_definitions(self, ref: ObjectRef) -> bool:
        shaping = self._shaping.get(ref)
        if shaping is None:
            return False
        customizer = self._customizers.get(shaping.customizer) if shaping.customizer is not None else None
        return shaping.expand or (customizer is not None and wants_expansion(customizer.get("metadata") or {}))

    def token(self, ref: ObjectRef) -> str:
        """What, besides the object, its copies depend on everywhere: the Customizer's resourceVersion (a
        WorkloadObject carries it, so the engine re-sends the object when it changes)."""
        shaping = self._shaping.get(ref)
        if shaping is None or shaping.customizer is None:
            return ""
        customizer = self._customizers.get(shaping.customizer)
        return "absent" if customizer is None else str(customizer["metadata"].get("resourceVersion", ""))

    def definitions(self, target: str) -> list[Mapping[str, str]]:
        """The parameters of a cluster: its first Location's labels, then its annotations, then the
        SyncTarget's labels (a spacehub extension: KubeStellar reads the Location only)."""
        out: list[Mapping[str, str]] = []
        locations = self._target_locations(target)
        location = self._location(locations[0]) if locations else None
        if location is not None:
            meta = location.get("metadata") or {}
            out += [meta.get("labels") or {}, meta.get("annotations") or {}]
        sync_target = self._sync_target(target)
        if sync_target is not None:
            out.append((sync_target.get("metadata") or {}).get("labels") or {})
        return out

    # --- one cluster's copy -------------------------------------------------------------------

    def revision(self, ref: ObjectRef, target: str, base: str) -> str:
        """The content revision of ``target``'s copy: changes whenever that copy can."""
        if ref not in self._shaping:
            return base
        inputs = self.token(ref)
        if self.depends_on_definitions(ref):
            inputs += "/" + _digest(self.definitions(target))
        return f"{base}-{hashlib.blake2b(inputs.encode(), digest_size=5).hexdigest()}"

    def shape(self, ref: ObjectRef, target: str, projected: dict[str, Any], base: str) -> Outcome:
        """``target``'s copy of an object every cluster otherwise gets as ``projected``."""
        shaping = self._shaping.get(ref)
        if shaping is None:
            return Outcome(projected, base)
        revision = self.revision(ref, target, base)
        inputs = (revision,)
        cached = self._outcomes.get((ref, target))
        if cached is not None and cached[0] == inputs:
            return cached[1]
        outcome = self._compute(shaping, target, projected, revision)
        if len(self._outcomes) >= _MAX_OUTCOMES:
            self._outcomes.clear()
        self._outcomes[(ref, target)] = (inputs, outcome)
        self._note(ref, target, outcome)
        return outcome

    def _compute(self, shaping: Shaping, target: str, projected: dict[str, Any], revision: str) -> Outcome:
        if shaping.problem is not None:
            return Outcome(None, revision, shaping.problem)
        customizer = None
        if shaping.customizer is not None:
            customizer = self._customizers.get(shaping.customizer)
            if customizer is None:
                _, namespace, name = shaping.customizer
                return Outcome(None, revision, f"Customizer {namespace}/{name} does not exist")
        try:
            result = customize(projected, customizer, self.definitions(target))
        except CustomizeError as exc:
            return Outcome(None, revision, str(exc))
        return Outcome(result.obj, revision, None, frozenset(result.unknown_keys))

    def _note(self, ref: ObjectRef, target: str, outcome: Outcome) -> None:
        problems = self.problems.setdefault(ref, Problems())
        if outcome.error is not None:
            problems.errors[target] = outcome.error
        else:
            problems.errors.pop(target, None)
        if outcome.unknown_keys:
            problems.unknown[target] = outcome.unknown_keys
        else:
            problems.unknown.pop(target, None)
        if not problems.errors and not problems.unknown:
            del self.problems[ref]

    def keep_targets(self, ref: ObjectRef, targets: set[str]) -> None:
        """Forget the problems of clusters that no longer get the object."""
        problems = self.problems.get(ref)
        if problems is None:
            return
        problems.errors = {t: e for t, e in problems.errors.items() if t in targets}
        problems.unknown = {t: k for t, k in problems.unknown.items() if t in targets}
        if not problems.errors and not problems.unknown:
            del self.problems[ref]

    def _forget_outcomes(self, ref: ObjectRef) -> None:
        for key in [k for k in self._outcomes if k[0] == ref]:
            del self._outcomes[key]


def _digest(definitions: list[Mapping[str, str]]) -> str:
    return hashlib.blake2b(orjson.dumps(definitions, option=orjson.OPT_SORT_KEYS), digest_size=8).hexdigest()
