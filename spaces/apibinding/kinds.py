"""The APIExport and APIBinding kinds (``apis.spacehub.io/v1alpha1``), from our own CRD definitions, and the
names the rest of the feature shares."""

from __future__ import annotations

import functools
from pathlib import Path

from apiserver.customresources import types_from_crd_files
from apiserver.resourcetypes import ResourceType

CRDS = Path(__file__).parent / "crds"
APIS_GROUP = "apis.spacehub.io"
EXPORTS = f"apiexports.{APIS_GROUP}"
BINDINGS = f"apibindings.{APIS_GROUP}"
# The resource and subresource a provider's credential is granted in the provider space, named after the export:
# "bind" on apiexports to bind it, the request's verb on apiexports/content to use its endpoint (kcp's names).
EXPORT_RESOURCE = "apiexports"
CONTENT = "content"
# What the export's endpoint adds to every object it serves: the space the object lives in (kcp: kcp.io/cluster).
SPACE_ANNOTATION = "spacehub.io/space"
# Where the hub serves each export's endpoint: <prefix><provider space>/<export>/clusters/<space or *>/…
ENDPOINT_PREFIX = "/services/apiexport/"


@functools.cache
def apibinding_types() -> tuple[ResourceType, ...]:
    """APIExport and APIBinding, cluster-scoped, with status subresources (the hub writes their conditions)."""
    return types_from_crd_files(CRDS)
