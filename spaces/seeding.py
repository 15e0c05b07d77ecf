"""A space's default objects, written in as few store commits as their order allows.

A new space holds kube's system namespaces, and whatever components of the server add (the default RBAC roles
and bindings, each namespace's ``default`` ServiceAccount and ``kube-root-ca.crt``) before its creator is told
it is Ready. Written one create at a time they were about 25 sequential commits per space; here they are two
``Objects.create_many`` calls: the namespaces with every cluster-scoped object, then the objects inside those
namespaces (a namespaced create is admitted only once its namespace's commit reached the namespace index).

The same pass runs for every space when the server starts, so that a space made before a default was added (or
whose creation stopped half-way) gets what it lacks; each component lists only what is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.controllers.namespaces import DEFAULT_NAMESPACES, NAMESPACES, NamespaceController
from apiserver.service import Creation, Objects, WriteOptions

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
            first = {self.manager: [(NAMESPACES, "", {"metadata": {"name": name}}) for name in new_namespaces]}
            for component in self.components:
                first.setdefault(component.manager, []).extend(
                    (resource, "", obj) for resource, obj in component.in_space(space))
            await self._create(space, first)
            # The namespaces tried just now (created, or created meanwhile by someone else) get their contents.
            second: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
            for component in self.components:
                for namespace in new_namespaces:
                    if self.namespaces.phase(space, namespace) == "Active":
                        second.setdefault(component.manager, []).extend(
                            (resource, namespace, obj) for resource, obj in component.in_namespace(space, namespace))
            await self._create(space, second)
        finally:
            self.seeding.discard(space)

    async def _create(self, space: str, by_manager: dict[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
        """Create each manager's objects with one ``create_many``, all at once: they join one commit."""
        calls, namespaces = [], []
        for manager, items in by_manager.items():
            if not items:
                continue
            creations = []
            for resource, namespace, obj in items:
                rtype = self.catalog.by_group_resource(space, resource)
                assert rtype is not None, resource  # every space serves kube's core kinds and RBAC
                creations.append(Creation(rtype, namespace, obj))
                namespaces.append(namespace)
            calls.append(self.objects.create_many(space, creations, WriteOptions(manager=manager)))
        outcomes = [outcome for call in await asyncio.gather(*calls) for outcome in call]
        for namespace, outcome in zip(namespaces, outcomes, strict=True):
            if not isinstance(outcome, StatusError) or outcome.code == 409:
                continue
            if namespace and outcome.code in (403, 404):  # its namespace went away meanwhile: nothing to keep
                continue
            raise outcome
