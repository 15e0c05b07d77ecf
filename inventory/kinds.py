"""The inventory kinds (SyncTarget, Location) as served resource types, from our own CRD definitions."""

from __future__ import annotations

import functools
from pathlib import Path

from apiserver.customresources import types_from_crd_files
from apiserver.resourcetypes import ResourceType

EDGE_GROUP = "edge.kubestellar.io"  # KubeStellar PoC2023q4's group: the inventory and the placement kinds
EDGE_VERSION = "v2alpha1"
SYNC_TARGETS = f"synctargets.{EDGE_GROUP}"
LOCATIONS = f"locations.{EDGE_GROUP}"
# On a SyncTarget: when its syncer credential was last rotated (every hub process then re-reads its tokens).
CREDENTIALS_ROTATED = "spacehub.io/credentials-rotated"
CRDS = Path(__file__).parent / "crds"


@functools.cache
def inventory_types() -> tuple[ResourceType, ...]:
    return types_from_crd_files(CRDS)
