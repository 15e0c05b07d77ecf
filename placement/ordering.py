"""The order in which a cluster's desired entries are applied (and, reversed, deleted).

Owns the dependency rules between entries: a Namespace comes before every object in it, a
CustomResourceDefinition before every custom resource of the kind it defines. Both point from a lower rank
to a higher one — rank 0 for Namespaces, 1 for CRDs, 2 for everything else; Namespaces and CRDs are
cluster-scoped and no CRD defines CRDs — so sorting by (rank, ref) honours every dependency, whatever the
space of each entry, and the order is deterministic. Never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from placement.model import DesiredEntry

CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
NAMESPACE_RESOURCE = "namespaces"
RANK = {"namespace": 0, "crd": 1, "object": 2}


def sort_key(entry: DesiredEntry) -> tuple[int, str, str, str, str]:
    """(rank, ref): plain strings rather than the ref itself, so heap comparisons stay cheap."""
    ref = entry.ref
    return RANK[entry.kind], ref.space, ref.resource, ref.namespace, ref.name


def apply_order(entries: Iterable[DesiredEntry]) -> list[DesiredEntry]:
    """Entries in creation order: Namespaces, then CRDs, then everything else."""
    return sorted({e.ref: e for e in entries}.values(), key=sort_key)


def deletion_order(entries: Iterable[DesiredEntry]) -> list[DesiredEntry]:
    """Entries in deletion order: custom resources and other objects, then CRDs, then Namespaces."""
    return list(reversed(apply_order(entries)))
