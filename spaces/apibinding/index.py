"""Every space's APIExports and APIBindings in memory, and what each binding serves, published in the catalogue.

Loaded from the store at startup and kept current from the watch bus (every process follows every commit, so
every hub process on one database serves the same bound types), and from the catalogue's custom types: a CRD
that becomes established, changes its schema or goes away in a provider space is re-offered to every space
bound to an export naming it as soon as this process serves it there. Bindings are state in stored objects
only; conditions and ``status.boundResources`` are what the status controller
(``spaces.apibinding.conditions``) writes from here, never read back to decide anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from apiserver.catalog import Catalog
from apiserver.store import LogRow
from apiserver.watch import Entry
from spaces.apibinding.kinds import BINDINGS, EXPORTS
from spaces.apibinding.resolve import ExportRef, Offer, Verdict, export_ref, offer, resolve_space

# Told which exports (their status) and which binding spaces (their bindings' status) may have changed.
ChangeListener = Callable[[set[ExportRef], set[str]], None]


class BindingIndex:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._exports: dict[ExportRef, dict[str, Any]] = {}
        self._bindings: dict[str, dict[str, dict[str, Any]]] = {}  # space -> binding name -> APIBinding
        self._verdicts: dict[str, dict[str, Verdict]] = {}  # space -> binding name -> verdict
        self._binders: dict[ExportRef, set[str]] = {}  # export -> spaces with a binding naming it
        self.listeners: list[ChangeListener] = []

    # --- keeping current ------------------------------------------------------------------------------

    def load(self, rows_of_resource: Callable[[str], list[LogRow]]) -> None:
        """Read every export and binding with ``rows_of_resource`` (``Objects.rows_of_resource``) and publish what
        the bindings serve (blocking: before serving)."""
        for row in rows_of_resource(EXPORTS):
            self._exports[ExportRef(row.key.space, row.key.name)] = orjson.loads(row.value)
        for row in rows_of_resource(BINDINGS):
            self._put_binding(row.key.space, row.key.name, orjson.loads(row.value))
        self._resolve(set(self._bindings))

    def on_commit(self, entries: Sequence[Entry]) -> None:
        exports: set[ExportRef] = set()
        spaces: set[str] = set()
        for entry in entries:
            key = entry.row.key
            if key.resource == EXPORTS:
                ref = ExportRef(key.space, key.name)
                if entry.row.deleted:
                    self._exports.pop(ref, None)
                else:
                    self._exports[ref] = orjson.loads(entry.row.value)
                exports.add(ref)
                spaces |= self._binders.get(ref, set())
            elif key.resource == BINDINGS:
                self._put_binding(key.space, key.name, None if entry.row.deleted else orjson.loads(entry.row.value))
                spaces.add(key.space)
        if exports or spaces:
            self._resolve(spaces)
            self._tell(exports, spaces)

    def on_custom_types(self, space: str) -> None:
        """``space``'s CRDs changed: what its exports offer, and its own bindings' clashes, may have too."""
        exports = {ref for ref in self._exports if ref.path == space}
        spaces = {s for ref in exports for s in self._binders.get(ref, ())}
        if space in self._bindings:
            spaces.add(space)
        if exports or spaces:
            self._resolve(spaces)
            self._tell(exports, spaces)

    def _put_binding(self, space: str, name: str, binding: dict[str, Any] | None) -> None:
        previous = self._bindings.get(space, {}).pop(name, None)
        if previous is not None:
            ref = export_ref(previous)
            if ref is not None and not any(export_ref(b) == ref for b in self._bindings[space].values()):
                self._binders.get(ref, set()).discard(space)
        if binding is not None:
            self._bindings.setdefault(space, {})[name] = binding
            ref = export_ref(binding)
            if ref is not None:
                self._binders.setdefault(ref, set()).add(space)
        if space in self._bindings and not self._bindings[space]:
            del self._bindings[space]

    def _resolve(self, spaces: set[str]) -> None:
        for space in spaces:
            bindings = list(self._bindings.get(space, {}).values())
            verdicts = resolve_space(bindings, self.offer, self.catalog.base_types(space),
                                     self.catalog.custom_types(space))
            if verdicts:
                self._verdicts[space] = verdicts
            else:
                self._verdicts.pop(space, None)
            types = tuple(t for verdict in verdicts.values() for t in verdict.served_types())
            # Unchanged types keep the space's discovery and OpenAPI caches (a recompiled CRD is a new type).
            if types != self.catalog.bound_types(space):
                self.catalog.set_bound_types(space, types)

    def _tell(self, exports: set[ExportRef], spaces: set[str]) -> None:
        for listener in self.listeners:
            listener(exports, spaces)

    # --- reading --------------------------------------------------------------------------------------

    def export(self, ref: ExportRef) -> dict[str, Any] | None:
        return self._exports.get(ref)

    def exports(self) -> list[ExportRef]:
        return list(self._exports)

    def offer(self, ref: ExportRef) -> Offer | None:
        """What an export offers now; None when there is no such export."""
        export = self._exports.get(ref)
        return None if export is None else offer(export, self.catalog.custom_types(ref.path))

    def bound_resources(self, space: str) -> dict[tuple[str, str], str]:
        """(group, plural) of each resource ``space`` serves through a binding -> the provider space."""
        return {(t.group, t.plural): verdict.ref.path for verdict in self._verdicts.get(space, {}).values()
                if verdict.ref is not None for t in verdict.served_types()}

    def binding_spaces(self) -> list[str]:
        return list(self._bindings)

    def verdicts(self, space: str) -> dict[str, Verdict]:
        """What each binding of ``space`` serves, by binding name."""
        return self._verdicts.get(space, {})

    def serving(self, ref: ExportRef, group_resource: str) -> list[str]:
        """The spaces where a binding to ``ref`` serves ``group_resource`` (<plural>.<group>), sorted."""
        return sorted(space for space in self._binders.get(ref, ()) if self.serves(space, ref, group_resource))

    def binds(self, space: str, ref: ExportRef) -> bool:
        """Whether ``space`` has a binding to ``ref`` (whatever it serves)."""
        return space in self._binders.get(ref, ())

    def serves(self, space: str, ref: ExportRef, group_resource: str) -> bool:
        return any(v.ref == ref and group_resource in v.served for v in self._verdicts.get(space, {}).values())

    def bound_by(self, space: str, group: str, plural: str, kind: str) -> str | None:
        """The binding of ``space`` serving a resource with this group and resource or kind name, if one does."""
        for name, verdict in self._verdicts.get(space, {}).items():
            for t in verdict.served_types():
                if t.group == group and (t.plural == plural or t.kind == kind):
                    return name
        return None
