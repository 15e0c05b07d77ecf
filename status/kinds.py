"""The status kinds served in every space, from our own CRD definitions: PlacementStatus (read-only)."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from spaces.customresources import types_from_crd_files
from spaces.registry import ResourceType

CRDS = Path(__file__).parent / "crds"
READ_ONLY = ("get", "list", "watch")  # written by the hub only; clients read (and watch) them
_READ_ONLY_KINDS = frozenset({"PlacementStatus"})


@functools.cache
def status_types() -> tuple[ResourceType, ...]:
    return tuple(dataclasses.replace(t, verbs=READ_ONLY) if t.kind in _READ_ONLY_KINDS else t
                 for t in types_from_crd_files(CRDS))
