"""The placement kinds (EdgePlacement, SinglePlacementSlice, Customizer), from our own CRD definitions.

EdgePlacement's strategy adds to its CRD's schema and CEL rules what they cannot say: the checks of
``spec.rollout`` (:mod:`placement.rollout_validation`), that ``spec.namespaceMapping`` maps to valid, distinct
namespaces (:mod:`spaces.nsmapping`) and that a CEL prioritizer's expression compiles and
returns a number (:mod:`placement.schedulingspec`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from apimachinery.errors import Cause
from apiserver.customresources import CustomResourceStrategy, types_from_crd_files
from apiserver.resourcetypes import ResourceType
from placement.rollout_validation import rollout_problems
from placement.schedulingspec import scheduling_causes
from spaces.nsmapping import MAPPING_FIELD, mapping_causes

CRDS = Path(__file__).parent / "crds"


class EdgePlacementStrategy(CustomResourceStrategy):
    def _check(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes = super()._check(obj, old)
        spec = obj.get("spec")
        if causes or not isinstance(spec, dict):
            return causes
        causes.extend(scheduling_causes(spec))
        causes.extend(mapping_causes(spec.get(MAPPING_FIELD), f"spec.{MAPPING_FIELD}"))
        if old is None or spec.get("rollout") != (old.get("spec") or {}).get("rollout"):
            # A status write, or a spec edit elsewhere, does not re-judge a stored rollout.
            causes.extend(rollout_problems(spec))
        return causes


@functools.cache
def placement_types() -> tuple[ResourceType, ...]:
    out = []
    for rtype in types_from_crd_files(CRDS):
        base = rtype.strategy
        if rtype.kind == "EdgePlacement" and isinstance(base, CustomResourceStrategy):
            rtype = dataclasses.replace(rtype, strategy=EdgePlacementStrategy(base.kind, base.schema, base.rules))
        out.append(rtype)
    return tuple(out)
