"""The simulator's catalogue: the hub's kinds plus the kinds a cluster serves (``spaces.builtin.clusterkinds``)."""

from __future__ import annotations

from spaces.builtin.clusterkinds import cluster_types
from spaces.catalog import Catalog


class SimCatalog(Catalog):
    """The hub's catalogue plus Pods and Nodes in every space."""

    def __init__(self) -> None:
        super().__init__(upstream_types=cluster_types())
