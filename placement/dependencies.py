"""The reference graph of each space: which objects each workload object needs (``dependencies: Follow``).

One networkx ``DiGraph`` per space, kept up to date object by object: an edge runs from a referrer to what
it references (:mod:`placement.references`), with how it uses it, and from a workload to each Service of
its namespace whose selector matches its pods' labels. A referenced object need not exist: its node waits
for it, so it is followed as soon as it appears (the caller says which objects exist). Nodes that no
edge touches are dropped. Never does I/O and knows nothing of placements: callers ask what a set of
selected objects reaches, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from placement.explain import describe_ref
from placement.model import ObjectRef, WorkloadObject
from placement.references import Labels

if TYPE_CHECKING:
    import networkx as nx

EXPOSED_BY = "is exposed by"  # a workload whose pods a Service selects
HOW = "how"  # the edge attribute: frozenset of the ways the referrer uses the referenced object
MAX_CYCLES = 10  # reported per question: enough to find and break them, bounded on a pathological graph

Exists = Callable[[ObjectRef], bool]
NsKey = tuple[str, str]
K = TypeVar("K")
V = TypeVar("V")


def _networkx() -> ModuleType:
    """networkx, imported when a graph is first used: the hub's start, which builds none when its spaces have no
    placements, does not wait for its import (0.1 to 0.3 s)."""
    import networkx

    return networkx


@dataclass(frozen=True, order=True)
class Because:
    """Why an object is followed: ``referrer`` (selected or itself followed) uses it ``how``."""

    referrer: ObjectRef
    how: tuple[str, ...]

    def __str__(self) -> str:
        return f"sent because {describe_ref(self.referrer)} {' and '.join(self.how)} it"


class DependencyGraph:
    def __init__(self) -> None:
        self._graphs: dict[str, nx.DiGraph] = {}
        self._references: dict[ObjectRef, dict[ObjectRef, frozenset[str]]] = {}  # what each object names
        self._pod_labels: dict[NsKey, dict[ObjectRef, dict[str, str]]] = {}  # workloads by namespace
        self._selectors: dict[NsKey, dict[ObjectRef, Labels]] = {}  # Services by namespace
        self._changed: dict[str, set[ObjectRef]] = {}  # see take_changed

    def set_object(self, obj: WorkloadObject) -> bool:
        """Take an object's (new) references, pod labels and Service selector; whether an edge changed."""
        ref, ns = obj.ref, (obj.ref.space, obj.ref.namespace)
        named: dict[ObjectRef, set[str]] = {}
        for r in obj.references:
            named.setdefault(ObjectRef(ref.space, r.resource, ref.namespace, r.name), set()).add(r.how)
        _put(self._references, ref, {target: frozenset(hows) for target, hows in named.items()})
        _put_in(self._pod_labels, ns, ref, dict(obj.pod_labels) if obj.pod_labels is not None else None)
        selector_changed = _put_in(self._selectors, ns, ref, obj.pod_selector)
        return self._rewire([ref, *(self._pod_labels.get(ns, {}) if selector_changed else ())])

    def remove_object(self, ref: ObjectRef) -> bool:
        """The object is gone: it references nothing any more (what references it keeps waiting for it); whether an
        edge changed."""
        ns = (ref.space, ref.namespace)
        self._references.pop(ref, None)
        _put_in(self._pod_labels, ns, ref, None)
        selector_changed = _put_in(self._selectors, ns, ref, None)
        return self._rewire([ref, *(self._pod_labels.get(ns, {}) if selector_changed else ())])

    def reachable(self, space: str, roots: Iterable[ObjectRef], exists: Exists) -> dict[ObjectRef, list[Because]]:
        """The existing objects the roots need, directly or through other objects, with why; a root is in the
        answer only when another root or a needed object needs it. Only existing objects have out-edges, so the
        walk never passes through a missing one."""
        graph = self._graphs.get(space)
        if graph is None:
            return {}
        starts = {r for r in roots if r in graph}
        users: set[ObjectRef] = set().union(*_networkx().bfs_layers(graph, starts)) if starts else set()
        return {ref: sorted(Because(user, tuple(sorted(graph.edges[user, ref][HOW])))
                            for user in graph.predecessors(ref) if user in users)
                for ref in users
                if exists(ref) and (ref not in starts or any(u in users for u in graph.predecessors(ref)))}

    def take_changed(self) -> dict[str, set[ObjectRef]]:
        """Per space, the objects whose edges changed since the last call (out-edges changed, or in-edges lost)."""
        changed, self._changed = self._changed, {}
        return changed

    def affected(self, space: str, nodes: Iterable[ObjectRef]) -> set[ObjectRef]:
        """The nodes and everything they reach: all whose being needed may depend on them."""
        graph = self._graphs.get(space)
        nodes = set(nodes)
        starts = {n for n in nodes if graph is not None and n in graph}
        return nodes.union(*_networkx().bfs_layers(graph, starts)) if starts else nodes

    def predecessors(self, ref: ObjectRef) -> list[tuple[ObjectRef, tuple[str, ...]]]:
        """What uses the object, and how."""
        graph = self._graphs.get(ref.space)
        if graph is None or ref not in graph:
            return []
        return [(user, tuple(sorted(how))) for user, _, how in graph.in_edges(ref, data=HOW)]

    def successors(self, ref: ObjectRef) -> list[ObjectRef]:
        graph = self._graphs.get(ref.space)
        return list(graph.successors(ref)) if graph is not None and ref in graph else []

    def explain(self, space: str, roots: set[ObjectRef],
                exists: Exists) -> tuple[dict[ObjectRef, list[str]], list[str]]:
        """What the roots need with why, in words, and the reference cycles among them and what they need."""
        followed = self.reachable(space, roots, exists)
        cycles = self.cycles(space, followed.keys() | roots)
        return ({ref: [str(b) for b in why] for ref, why in followed.items()},
                ["reference cycle: " + " → ".join(describe_ref(r) for r in [*c, c[0]]) for c in cycles])

    def cycles(self, space: str, nodes: Iterable[ObjectRef]) -> list[list[ObjectRef]]:
        """Reference cycles among these objects (at most :data:`MAX_CYCLES`), each from its smallest member."""
        graph = self._graphs.get(space)
        if graph is None:
            return []
        found = []
        for cycle in _networkx().simple_cycles(graph.subgraph(nodes)):
            start = cycle.index(min(cycle))
            found.append(cycle[start:] + cycle[:start])
            if len(found) == MAX_CYCLES:
                break
        return sorted(found)

    def knows(self, ref: ObjectRef) -> bool:
        """Whether an edge touches the object: only then can it change what is reached."""
        graph = self._graphs.get(ref.space)
        return graph is not None and ref in graph

    def edges(self, space: str) -> set[tuple[ObjectRef, ObjectRef, frozenset[str]]]:
        graph = self._graphs.get(space)
        return set() if graph is None else {(u, v, how) for u, v, how in graph.edges(data=HOW)}

    def _rewire(self, refs: Iterable[ObjectRef]) -> bool:
        """Make each object's out-edges what it references plus the Services exposing its pods; whether any
        edge changed."""
        changed = False
        for ref in refs:
            wanted = dict(self._references.get(ref, {}))
            labels = self._pod_labels.get((ref.space, ref.namespace), {}).get(ref)
            if labels is not None:
                for service, selector in self._selectors.get((ref.space, ref.namespace), {}).items():
                    if all(labels.get(k) == v for k, v in selector):
                        wanted[service] = wanted.get(service, frozenset()) | {EXPOSED_BY}
            graph = self._graphs.get(ref.space)
            if graph is None:
                if not wanted:
                    continue
                graph = self._graphs[ref.space] = _networkx().DiGraph()
            old = set(graph.successors(ref)) if ref in graph else set()
            if old != wanted.keys() or any(graph.edges[ref, t][HOW] != how for t, how in wanted.items() if t in old):
                changed = True
                self._changed.setdefault(ref.space, set()).update({ref}, old - wanted.keys())
            for target in old - wanted.keys():
                graph.remove_edge(ref, target)
            for target, how in wanted.items():
                graph.add_edge(ref, target, **{HOW: how})
            for node in old - wanted.keys() | {ref}:
                if node in graph and graph.degree(node) == 0:
                    graph.remove_node(node)
            if not graph:
                del self._graphs[ref.space]
        return changed


def _put(table: dict[K, V], key: K, value: V) -> None:
    if value:
        table[key] = value
    else:
        table.pop(key, None)


def _put_in(index: dict[NsKey, dict[ObjectRef, V]], ns: NsKey, ref: ObjectRef, value: V | None) -> bool:
    """Set (None: drop) one object's entry of a per-namespace index; whether it changed."""
    members = index.get(ns, {})
    if members.get(ref) == value:
        return False
    if value is None:
        del members[ref]
        if not members:
            del index[ns]
    else:
        index.setdefault(ns, members)[ref] = value
    return True
