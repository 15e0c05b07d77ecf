"""What an APIExport offers and what each APIBinding of a space serves: pure decisions over stored objects.

The rules (docs/apibindings.md says why):

* An export offers the served versions of the CRDs it names that are established in its space; a CRD it names
  that is not (absent, not yet established, or its names refused) is reported and offered once it is.
* A binding serves every resource its export offers, except one that clashes with what the space already
  serves: a built-in kind or a CRD of the space's own with the same group and resource or kind (the space's own
  definition always wins), or a resource an earlier binding of the space serves (bindings are taken oldest
  first, then by name). A clash is reported on the binding and that resource is not served by it; the others
  are.

Everything here is computed from objects every hub process has, so all processes decide the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.resourcetypes import ResourceType
from apiserver.spacepaths import store_id


@dataclass(frozen=True)
class ExportRef:
    path: str  # the provider space
    name: str

    def __str__(self) -> str:
        return f'APIExport "{self.name}" of space "{self.path}"'


@dataclass(frozen=True)
class Offer:
    """What one export offers: each named CRD's served types (preferred version first), and the names it could
    not offer."""

    types: Mapping[str, tuple[ResourceType, ...]]  # CRD name (<plural>.<group>) -> its served versions
    missing: tuple[str, ...] = ()

    def all_types(self) -> tuple[ResourceType, ...]:
        return tuple(t for versions in self.types.values() for t in versions)


@dataclass(frozen=True)
class Verdict:
    """What one binding serves, and why not more."""

    ref: ExportRef | None  # None: the binding names no export (refused at admission; kept defensive)
    served: Mapping[str, tuple[ResourceType, ...]] = field(default_factory=dict)  # CRD name -> versions
    export_found: bool = False
    missing: tuple[str, ...] = ()  # CRDs the export names that its space does not serve
    conflicts: tuple[str, ...] = ()  # one message per resource not served because of a clash

    def served_types(self) -> tuple[ResourceType, ...]:
        return tuple(t for versions in self.served.values() for t in versions)


def export_ref(binding: Mapping[str, Any]) -> ExportRef | None:
    export = (((binding.get("spec") or {}).get("reference") or {}).get("export") or {})
    path, name = export.get("path"), export.get("name")
    if not (isinstance(path, str) and isinstance(name, str) and path and name):
        return None
    return ExportRef(store_id(path), name)  # ``root:org:p`` and ``org:p`` name one space


def offer(export: Mapping[str, Any], provider_types: Sequence[ResourceType]) -> Offer:
    """What ``export`` offers, given the custom resource types its space serves."""
    by_crd: dict[str, list[ResourceType]] = {}
    for t in provider_types:
        # An established CRD's name is <plural>.<group> (apiextensions validates it), its types' group_resource.
        by_crd.setdefault(t.group_resource, []).append(t)
    types: dict[str, tuple[ResourceType, ...]] = {}
    missing: list[str] = []
    for name in (export.get("spec") or {}).get("customResourceDefinitions") or []:
        found = by_crd.get(name)
        if found:
            types[name] = tuple(found)
        else:
            missing.append(name)
    return Offer(types, tuple(missing))


def _claims(t: ResourceType) -> tuple[tuple[str, str], tuple[str, str]]:
    return (t.group, "resource:" + t.plural), (t.group, "kind:" + t.kind)


def _creation_order(binding: Mapping[str, Any]) -> tuple[str, str]:
    meta = binding.get("metadata") or {}
    return meta.get("creationTimestamp") or "", meta.get("name") or ""


def resolve_space(bindings: Sequence[Mapping[str, Any]], offers: Callable[[ExportRef], Offer | None],
                  builtin: Sequence[ResourceType], own_crds: Sequence[ResourceType]) -> dict[str, Verdict]:
    """The verdict of every binding of one space, by binding name.

    ``offers`` gives an export's offer (None: no such export); ``builtin`` is what the space serves whatever
    its CRDs, ``own_crds`` the types of its own established CRDs.
    """
    held: dict[tuple[str, str], str] = {}
    for t in builtin:
        for claim in _claims(t):
            held.setdefault(claim, f'the built-in resource "{t.group_resource}"')
    for t in own_crds:
        for claim in _claims(t):
            held.setdefault(claim, f'CustomResourceDefinition "{t.group_resource}" of this space')
    verdicts: dict[str, Verdict] = {}
    for binding in sorted(bindings, key=_creation_order):
        name = binding["metadata"]["name"]
        ref = export_ref(binding)
        found = offers(ref) if ref is not None else None
        if ref is None or found is None:
            verdicts[name] = Verdict(ref)
            continue
        served: dict[str, tuple[ResourceType, ...]] = {}
        conflicts: list[str] = []
        for crd, versions in found.types.items():
            holder = next((held[c] for t in versions for c in _claims(t) if c in held), None)
            if holder is not None:
                conflicts.append(f"{crd} clashes with {holder}")
                continue
            served[crd] = versions
            for t in versions:
                for claim in _claims(t):
                    held[claim] = f'APIBinding "{name}"'
        verdicts[name] = Verdict(ref, served, True, found.missing, tuple(conflicts))
    return verdicts
