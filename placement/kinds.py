"""The placement kinds (EdgePlacement, SinglePlacementSlice, Customizer), from our own CRD definitions; the
EdgePlacement's strategy adds the checks of ``spec.rollout`` (``placement.rollout_validation``)."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from apiserver.customresources import types_from_crd_files
from apiserver.resourcetypes import ResourceType
from placement.rollout_validation import EdgePlacementStrategy

CRDS = Path(__file__).parent / "crds"


@functools.cache
def placement_types() -> tuple[ResourceType, ...]:
    return tuple(dataclasses.replace(t, strategy=EdgePlacementStrategy(t.strategy)) if t.kind == "EdgePlacement"
                 else t for t in types_from_crd_files(CRDS))
