"""Hubs of hubs, every part its own process: a parent hub whose clusters are child hubs.

:class:`Tree` starts the parent ``spacehub hub serve``; per child hub, another ``spacehub hub serve``, one
``spacehub sim serve --with-syncers`` whose clusters register at that child hub (label ``env=leaf``), the
child's space the parent writes into (``fanout``) with a user of its own for the parent's syncer, the child
registered at the parent as a cluster (``tier=hub``, ``hub=<name>``), and a standalone ``spacehub syncer run``
whose cluster is that space. Configuration only, as README "Hubs of hubs" tells an operator to do it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.harness import Hub, free_port, wait_for
from tests.sim_harness import Sim
from tests.syncer_harness import SyncerProcess

CHILD_SPACE = "fanout"  # the space of each child hub that the parent's syncer writes into
SYNCER_USER = "parent-hub"  # the child hub's user the parent's syncer acts as
LEAF_LABEL = {"env": "leaf"}
EDGE = "edge.kubestellar.io/v2alpha1"
CHILD_HUB_PLACEMENT = "spacehub.io/child-hub-placement"


@dataclass
class Child:
    name: str  # its cluster (SyncTarget) name at the parent
    hub: Hub
    sim: Sim  # its leaf clusters wec1, wec2 …, registered at ``hub``
    syncer: SyncerProcess | None = None  # the parent's syncer, writing into ``CHILD_SPACE``

    def clusters(self) -> list[dict[str, Any]]:
        with self.hub.client() as c:
            return list(c.get("/placement/v1/clusters").json()["items"])


@dataclass
class Tree:
    base: Path
    children: Sequence[str] = ("child-a", "child-b")
    leaves: int = 2  # simulated clusters per child hub
    parent_args: Sequence[str] = ()
    sim_args: Sequence[str] = ("--ready-delay", "0")
    parent: Hub = field(init=False)
    child: dict[str, Child] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.parent = Hub(data_dir=self.base / "parent", port=free_port(), home=self.base / "home",
                          extra_args=self.parent_args)
        for name in self.children:
            folder = self.base / name
            hub = Hub(data_dir=folder / "hub", port=free_port(), home=folder / "home")
            labels = [arg for k, v in LEAF_LABEL.items() for arg in ("--cluster-label", f"{k}={v}")]
            sim = Sim(data_dir=folder / "sim", port=free_port(), home=folder / "simhome", clusters=self.leaves,
                      extra_args=["--hub", hub.base_url, "--hub-kubeconfig", str(hub.kubeconfig), "--with-syncers",
                                  *labels, *self.sim_args])
            self.child[name] = Child(name, hub, sim)

    def start(self) -> Tree:
        self.parent.start()
        for child in self.child.values():
            child.hub.start()
            child.sim.start()
        for child in self.child.values():
            wait_for(lambda child=child: sum(1 for c in child.clusters() if c["ready"] and c["allocatable"])  # type: ignore[misc]
                     == self.leaves, timeout=60, message=f"{child.name}'s leaf clusters Ready with their capacity")
            self.link(child)
        return self

    def link(self, child: Child) -> None:
        """Make ``child`` a cluster of the parent: its space, the parent syncer's user, the registration, the
        syncer process."""
        folder = self.base / child.name
        child.hub.create_space(CHILD_SPACE)
        kubeconfig = folder / "parent-syncer.kubeconfig"
        child.hub.spacehub("user", "create", SYNCER_USER, "--space", CHILD_SPACE, "--role", "admin",
                           "--out", str(kubeconfig))
        # Reading the child hub's clusters (its capacity) is listing SyncTargets in its inventory space.
        child.hub.spacehub("user", "create", SYNCER_USER, "--space", "inventory", "--role", "view",
                           "--out", str(folder / "inventory-view.kubeconfig"))
        bootstrap = folder / "bootstrap.yaml"
        self.parent.spacehub("cluster", "register", child.name, "--label", "tier=hub", "--label",
                             f"hub={child.name}", "--bootstrap-out", str(bootstrap))
        env = child.sim.env()
        env.pop("KUBECONFIG", None)
        child.syncer = SyncerProcess(name=child.name, bootstrap=bootstrap, kubeconfig=kubeconfig,
                                     state=folder / "parent-syncer.db", log_path=folder / "parent-syncer.log",
                                     env=env)
        child.syncer.start()

    def close(self) -> None:
        for child in self.child.values():
            if child.syncer is not None:
                child.syncer.stop()
            child.sim.stop()
            child.hub.stop()
        self.parent.stop()

    # --- reading the tree ---------------------------------------------------------------------------

    def leaves_of(self) -> list[tuple[Child, str]]:
        """Every leaf cluster: (its child hub, its name in that hub's simulator)."""
        return [(child, name) for child in self.child.values() for name in child.sim.names]

    def parent_get(self, space: str, path: str) -> dict[str, Any] | None:
        return _get(self.parent.client(), f"/clusters/{space}{path}")

    def child_get(self, child: Child, path: str) -> dict[str, Any] | None:
        return _get(child.hub.client(), f"/clusters/{CHILD_SPACE}{path}")

    def leaf_get(self, child: Child, cluster: str, path: str) -> dict[str, Any] | None:
        return _get(child.sim.client(cluster), path)


def _get(client: httpx.Client, path: str) -> dict[str, Any] | None:
    with client as c:
        r = c.get(path)
    if r.status_code == 404:
        return None
    assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
    return dict(r.json())


def to_hubs(name: str, downsync: list[dict[str, Any]]) -> dict[str, Any]:
    """The parent's EdgePlacement: to every child hub, with their (aggregated) status coming home."""
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": {"tier": "hub"}}], "downsync": downsync,
                     "wantSingletonReportedState": True, "wantMultiWECReportedState": True}}


def to_leaves(name: str, downsync: list[dict[str, Any]]) -> dict[str, Any]:
    """An EdgePlacement for the child hubs: placed by the parent, active in each child hub's space."""
    return {"apiVersion": EDGE, "kind": "EdgePlacement",
            "metadata": {"name": name, "annotations": {CHILD_HUB_PLACEMENT: "true"}},
            "spec": {"locationSelectors": [{"matchLabels": LEAF_LABEL}], "downsync": downsync,
                     "wantSingletonReportedState": True, "wantMultiWECReportedState": True}}
