"""The placement kinds (EdgePlacement, SinglePlacementSlice, Customizer), from our own CRD definitions."""

from __future__ import annotations

import functools
from pathlib import Path

from apiserver.customresources import types_from_crd_files
from apiserver.resourcetypes import ResourceType

CRDS = Path(__file__).parent / "crds"


@functools.cache
def placement_types() -> tuple[ResourceType, ...]:
    return types_from_crd_files(CRDS)
