"""Which resource types each space serves, and the schema definitions behind them.

Built-in kinds are served in every space; spacehub's own kinds (Space) only in ``root``. Custom
resources (CRDs) will be added per space by the CRD controller; every lookup goes through here so
the HTTP layer never needs to know where a type came from.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from spaces.builtin.definitions import load_definitions
from spaces.builtin.kinds import builtin_types, root_types, spacehub_definitions
from spaces.registry import ResourceType

ROOT_SPACE = "root"


@functools.cache
def definitions() -> Mapping[str, dict[str, Any]]:
    merged = dict(load_definitions())
    merged.update(spacehub_definitions())
    return merged


class Catalog:
    def __init__(self) -> None:
        self._builtin = tuple(builtin_types())
        self._root = self._builtin + tuple(root_types())
        self._index_builtin = self._index(self._builtin)
        self._index_root = self._index(self._root)

    @staticmethod
    def _index(types: tuple[ResourceType, ...]) -> dict[tuple[str, str, str], ResourceType]:
        return {(t.group, t.version, t.plural): t for t in types}

    def types(self, space: str) -> tuple[ResourceType, ...]:
        return self._root if space == ROOT_SPACE else self._builtin

    def lookup(self, space: str, group: str, version: str, plural: str) -> ResourceType | None:
        index = self._index_root if space == ROOT_SPACE else self._index_builtin
        return index.get((group, version, plural))

    def by_group_resource(self, space: str, group_resource: str) -> ResourceType | None:
        for t in self.types(space):
            if t.group_resource == group_resource:
                return t
        return None

    def by_kind(self, space: str, group: str, kind: str) -> ResourceType | None:
        """The served type of a kind (any version), e.g. to resolve an ownerReference."""
        for t in self.types(space):
            if t.group == group and t.kind == kind:
                return t
        return None

    def schema(self, rtype: ResourceType) -> dict[str, Any] | None:
        return definitions().get(rtype.schema_name) if rtype.schema_name else None
