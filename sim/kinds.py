"""The simulator's catalogue: the spaces' kinds plus the kinds a cluster serves (``apiserver.builtin.clusterkinds``)."""

from __future__ import annotations

from apiserver.builtin.clusterkinds import cluster_types
from apiserver.catalog import Catalog
from spaces.kind import spaces_catalog


def sim_catalog() -> Catalog:
    """The spaces' catalogue plus Pods and Nodes in every space."""
    return spaces_catalog(upstream_types=cluster_types())
