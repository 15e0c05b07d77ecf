"""A space's default objects, written in one store commit.

A new space holds kube's system namespaces, and whatever components of the server add (the default RBAC roles
and bindings, each namespace's ``default`` ServiceAccount and ``kube-root-ca.crt``) before its creator is told
it is Ready. Written one create at a time they were about 25 sequential commits per space; here they are one
``Objects.create_many`` call, the namespaces first (the objects inside them are admitted as being in a namespace
written before them in the same commit), each object recorded under its component's field manager.

The same pass runs for every space when the server starts, so that a space made before a default was added (or
whose creation stopped half-way) gets what it lacks; each component lists only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.controllers.namespaces import DEFAULT_NAMESPACES, NAMESPACES, NamespaceController
from apiserver.service import Objects
from apiserver.writeoptions import Creation, WriteOptions

# One default object: its group_resource (as the catalogue names it) and its body.
Default = tuple[str, dict[str, Any]]


def _none_in_space(_space: str) -> list[Default]:
    return []


def _none_in_namespace(_space: str, _namespace: str) -> list[Default]:
    return []


@dataclass
class SpaceDefaults:
    """What one component puts in every space, written under its field manager's name."""
    manager: str
    # The cluster-scoped objects a space lacks.
    in_space: Callable[[str], list[Default]] = _none_in_space
    # The objects a system namespace of a space gets when it is created.
    in_namespace: Callable[[str, str], list[Default]] = _none_in_namespace


@dataclass
class SpaceSeeder:
    """Writes what a space lacks of its system namespaces and of each component's defaults (``components``, which
    the server's parts register at start)."""
    objects: Objects
    catalog: Catalog
    namespaces: NamespaceController
    components: list[SpaceDefaults] = field(default_factory=list)
    # Spaces whose defaults are being written now: a controller that would write some of them on seeing a new
    # namespace leaves them to this pass.
    seeding: set[str] = field(default_factory=set)
    manager: str = "spacehub"  # whose the system namespaces are

    async def seed(self, space: str) -> None:
        """Write the defaults ``space`` lacks; an object another writer created meanwhile is as good (409)."""
        self.seeding.add(space)
        try:
            new_namespaces = [name for name in DEFAULT_NAMESPACES if self.namespaces.phase(space, name) is None]
            wanted = [(NAMESPACES, "", {"metadata": {"name": name}}, self.manager) for name in new_namespaces]
            for component in self.components:
                wanted.extend((resource, "", obj, component.manager) for resource, obj in component.in_space(space))
            # The namespaces written now get their contents in the same commit, after them.
            for component in self.components:
                for namespace in new_namespaces:
                    wanted.extend((resource, namespace, obj, component.manager)
                                  for resource, obj in component.in_namespace(space, namespace))
            if wanted:
                await self._create(space, wanted)
        finally:
            self.seeding.discard(space)

    async def _create(self, space: str, wanted: list[tuple[str, str, dict[str, Any], str]]) -> None:
        creations = []
        for resource, namespace, obj, manager in wanted:
            rtype = self.catalog.by_group_resource(space, resource)
            assert rtype is not None, resource  # every space serves kube's core kinds and RBAC
            creations.append(Creation(rtype, namespace, obj, manager))
        outcomes = await self.objects.create_many(space, creations, WriteOptions(manager=self.manager))
        for (_resource, namespace, _obj, _manager), outcome in zip(wanted, outcomes, strict=True):
            if not isinstance(outcome, StatusError) or outcome.code == 409:
                continue
            if namespace and outcome.code in (403, 404):  # its namespace went away meanwhile: nothing to keep
                continue
            raise outcome
