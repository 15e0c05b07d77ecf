"""The inventory kinds (SyncTarget, Location) as served resource types, from our own CRD definitions."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from spaces.customresources import types_from_crd
from spaces.registry import ResourceType

CRDS = Path(__file__).parent / "crds"


def load_types(directory: Path) -> tuple[ResourceType, ...]:
    types: list[ResourceType] = []
    for path in sorted(directory.glob("*.yaml")):
        types.extend(types_from_crd(yaml.safe_load(path.read_text())))
    return tuple(types)


@functools.cache
def inventory_types() -> tuple[ResourceType, ...]:
    return load_types(CRDS)
