"""The order in which a cluster's desired entries are applied (and, reversed, deleted).

Owns the dependency rules between entries: a Namespace comes before every object in it, a
CustomResourceDefinition before every custom resource of the kind it defines. The entries form a
networkx DAG whose topological order is taken lexicographically by (rank, ref) — rank 0 for
Namespaces, 1 for CRDs, 2 for everything else — so the order is deterministic, all Namespaces come
first, then all CRDs, then the rest. Dependencies are by name on the cluster, not by space: a Namespace
entry from any space precedes the objects of every space in that namespace. Never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from placement.model import DesiredEntry, ObjectRef

CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
NAMESPACE_RESOURCE = "namespaces"
RANK = {"namespace": 0, "crd": 1, "object": 2}


def crd_defines(ref: ObjectRef) -> tuple[str, str]:
    """(group, plural) of the CRD named ``ref`` (Kubernetes requires the name ``<plural>.<group>``)."""
    plural, _, group = ref.name.partition(".")
    return group, plural


def sort_key(entry: DesiredEntry) -> tuple[int, str, str, str, str]:
    """(rank, ref): plain strings rather than the ref itself, so heap comparisons stay cheap."""
    ref = entry.ref
    return RANK[entry.kind], ref.space, ref.resource, ref.namespace, ref.name


def apply_order(entries: Iterable[DesiredEntry]) -> list[DesiredEntry]:
    """Entries in creation order: Namespaces, then CRDs, then everything else."""
    unique = list({e.ref: e for e in entries}.values())
    keys = [sort_key(e) for e in unique]
    # Nodes are list positions: cheaper to hash than refs, and the sort keys are computed once.
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(range(len(unique)))
    namespaces: dict[str, list[int]] = {}
    crds: dict[tuple[str, str], list[int]] = {}
    for i, entry in enumerate(unique):
        if entry.kind == "namespace":
            namespaces.setdefault(entry.ref.name, []).append(i)
        elif entry.kind == "crd":
            crds.setdefault(crd_defines(entry.ref), []).append(i)
    edges: list[tuple[int, int]] = []
    for i, entry in enumerate(unique):
        if entry.kind == "namespace":
            continue
        ref = entry.ref
        if ref.namespace:
            edges.extend((ns, i) for ns in namespaces.get(ref.namespace, ()))
        if crds:
            plural, _, group = ref.resource.partition(".")
            edges.extend((crd, i) for crd in crds.get((group, plural), ()) if crd != i)
    graph.add_edges_from(edges)
    return [unique[i] for i in nx.lexicographical_topological_sort(graph, key=keys.__getitem__)]


def deletion_order(entries: Iterable[DesiredEntry]) -> list[DesiredEntry]:
    """Entries in deletion order: custom resources and other objects, then CRDs, then Namespaces."""
    return list(reversed(apply_order(entries)))
