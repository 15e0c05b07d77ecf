"""The placement kinds (EdgePlacement, SinglePlacementSlice, Customizer), from our own CRD definitions."""

from __future__ import annotations

import functools
from pathlib import Path

from inventory.kinds import load_types
from spaces.registry import ResourceType

CRDS = Path(__file__).parent / "crds"


@functools.cache
def placement_types() -> tuple[ResourceType, ...]:
    return load_types(CRDS)
