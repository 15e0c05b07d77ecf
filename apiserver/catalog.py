"""Which resource types each space serves, and the schema definitions behind them.

Built-in kinds are served in every space; the kinds the owner names as ``root_types`` (the Space kind of
``spaces.kind``) in ``root``, and in every space where spaces nest (the hub's; a simulated cluster's spaces
are clusters and hold none); custom resources
per space, as the CRD controller establishes them (``set_custom_types``), and another space's custom
resources where an APIBinding serves them (``set_bound_types``, ``spaces.apibinding``). Every lookup
goes through here so the HTTP layer never needs to know where a type came from.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from apiserver.builtin.kinds import builtin_types
from apiserver.customresources import CRD_RESOURCE, CustomResourceDefinitionStrategy, openapi_definitions
from apiserver.definitions import load_definitions
from apiserver.resourcetypes import ResourceType
from apiserver.spacepaths import ROOT

TypeIndex = dict[tuple[str, str, str], ResourceType]


def _with_full_crd_checks(types: tuple[ResourceType, ...]) -> tuple[ResourceType, ...]:
    return tuple(dataclasses.replace(t, strategy=CustomResourceDefinitionStrategy(t.strategy))
                 if t.group_resource == CRD_RESOURCE else t for t in types)


class Catalog:
    def __init__(self, extra_types: tuple[ResourceType, ...] = (),
                 upstream_types: tuple[ResourceType, ...] = (), root_types: tuple[ResourceType, ...] = (),
                 root_definitions: Mapping[str, dict[str, Any]] | None = None, nested_spaces: bool = False) -> None:
        """``extra_types``: kinds other layers serve in every space (inventory, placement), described to OpenAPI
        and explain as schema-less objects; ``upstream_types``: upstream kinds served in every space whose full
        schemas are already in the shared definitions (a cluster's Pods and Nodes); ``root_types``: kinds served
        in ``root`` (the Space kind), with their full schemas in ``root_definitions``; ``nested_spaces``: those
        are served in every space, not only in root (``apiserver.spacepaths``)."""
        self._builtin = _with_full_crd_checks(tuple(builtin_types())) + extra_types + upstream_types
        self._root = self._builtin + root_types
        self._nested_spaces = nested_spaces
        self._definitions: Mapping[str, dict[str, Any]] = (
            {**load_definitions(), **root_definitions} if root_definitions else load_definitions())
        self._base_defs: Mapping[str, dict[str, Any]] = (
            ChainMap(openapi_definitions(extra_types), self._definitions) if extra_types else self._definitions)
        self._custom: dict[str, tuple[ResourceType, ...]] = {}
        self._bound: dict[str, tuple[ResourceType, ...]] = {}
        # Told the space whose custom types were just replaced (the bindings of other spaces serve them).
        self.custom_listeners: list[Callable[[str], None]] = []
        self._types: dict[str, tuple[ResourceType, ...]] = {}
        self._index: dict[str, TypeIndex] = {}
        self._defs: dict[str, Mapping[str, dict[str, Any]]] = {}

    def served_everywhere(self) -> frozenset[tuple[str, str]]:
        """(group, plural) of the kinds every workload space serves, custom resources aside."""
        return frozenset((t.group, t.plural) for t in self._builtin)

    def served_read_only(self) -> frozenset[str]:
        """Stored kinds (``plural.group``) of every workload space that clients cannot create: only the server
        writes them (the hub's reports, such as PlacementStatus) or they show what lives elsewhere."""
        return frozenset(t.group_resource for t in self._builtin if "create" not in t.verbs)

    def _base(self, space: str) -> tuple[ResourceType, ...]:
        return self._root if space == ROOT or self._nested_spaces else self._builtin

    def set_custom_types(self, space: str, types: tuple[ResourceType, ...]) -> None:
        """Replace the custom resource types a space serves (called by the CRD controller)."""
        if types:
            self._custom[space] = types
        else:
            self._custom.pop(space, None)
        for cache in (self._types, self._index, self._defs):
            cache.pop(space, None)
        for listener in self.custom_listeners:
            listener(space)

    def custom_types(self, space: str) -> tuple[ResourceType, ...]:
        return self._custom.get(space, ())

    def set_bound_types(self, space: str, types: tuple[ResourceType, ...]) -> None:
        """Replace the types a space serves through its APIBindings (called by ``spaces.apibinding``)."""
        if types:
            self._bound[space] = types
        else:
            self._bound.pop(space, None)
        for cache in (self._types, self._index, self._defs):
            cache.pop(space, None)

    def bound_types(self, space: str) -> tuple[ResourceType, ...]:
        return self._bound.get(space, ())

    def base_types(self, space: str) -> tuple[ResourceType, ...]:
        """What a space serves whatever its CRDs and bindings."""
        return self._base(space)

    def types(self, space: str) -> tuple[ResourceType, ...]:
        cached = self._types.get(space)
        if cached is None:
            cached = self._base(space) + self._custom.get(space, ()) + self._bound.get(space, ())
            self._types[space] = cached
        return cached

    def lookup(self, space: str, group: str, version: str, plural: str) -> ResourceType | None:
        index = self._index.get(space)
        if index is None:
            index = {(t.group, t.version, t.plural): t for t in self.types(space)}
            self._index[space] = index
        return index.get((group, version, plural))

    def by_group_resource(self, space: str, group_resource: str) -> ResourceType | None:
        """The preferred served type of a stored kind."""
        for t in self.types(space):
            if t.group_resource == group_resource:
                return t
        return None

    def by_kind(self, space: str, group: str, kind: str) -> ResourceType | None:
        """The served type of a kind (preferred version), e.g. to resolve an ownerReference."""
        for t in self.types(space):
            if t.group == group and t.kind == kind:
                return t
        return None

    def definitions_for(self, space: str) -> Mapping[str, dict[str, Any]]:
        """Schema definitions for OpenAPI and explain: built-ins plus the space's custom resources.
        The mapping object stays the same until the space's types change (caches key on it)."""
        defs = self._defs.get(space)
        if defs is None:
            custom = self._custom.get(space, ()) + self._bound.get(space, ())
            defs = ChainMap(openapi_definitions(custom), self._base_defs) if custom else self._base_defs
            self._defs[space] = defs
        return defs

    def definitions(self) -> Mapping[str, dict[str, Any]]:
        """The full schemas of the built-in and root kinds (strategic merge metadata, field validation)."""
        return self._definitions

    def schema(self, rtype: ResourceType) -> dict[str, Any] | None:
        if rtype.schema is not None:
            return rtype.schema
        return self._definitions.get(rtype.schema_name) if rtype.schema_name else None
