"""Hubs of hubs, end to end through three levels of separate processes (README "Hubs of hubs").

The parent hub's clusters are two child hubs, each with two simulated clusters; the parent's syncers write
into a space of each child hub with nothing but a kubeconfig for it. One ``kubectl apply`` at the top (a
Deployment, the placement to the child hubs, and the placement the child hubs fan it out with) reaches all
four leaves; a change follows it down, ``readyReplicas`` comes back up, and deleting it at the top removes it
everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.hubs_harness import CHILD_HUB_PLACEMENT, Child, Tree, to_hubs, to_leaves
from tests.syncer_harness import COUNT, deployment, namespace

TOP = "top"
DEPLOY = "/apis/apps/v1/namespaces/shop/deployments/web"
FANOUT = "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/to-leaves"


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Tree]:
    t = Tree(tmp_path)
    try:
        yield t.start()
    finally:
        t.close()


def top_documents(replicas: int) -> list[dict[str, Any]]:
    web = [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["shop"]}]
    fan = {"apiGroup": "edge.kubestellar.io", "resources": ["edgeplacements"], "objectNames": ["to-leaves"]}
    app = deployment("web", "shop", replicas=replicas)
    return [namespace("shop"), app, to_hubs("to-hubs", [*web, fan]), to_leaves("to-leaves", web)]


def leaf_replicas(tree: Tree, child: Child, cluster: str) -> tuple[int, int] | None:
    """(spec.replicas, status.readyReplicas) of the leaf's copy of web, None while it has none."""
    live = tree.leaf_get(child, cluster, DEPLOY)
    if live is None:
        return None
    return int(live["spec"]["replicas"]), int((live.get("status") or {}).get("readyReplicas") or 0)


def all_leaves(tree: Tree, replicas: int) -> bool:
    return all(leaf_replicas(tree, child, cluster) == (replicas, replicas) for child, cluster in tree.leaves_of())


def top_status(tree: Tree) -> dict[str, Any]:
    """The top object's status once it is about its current generation in every cluster (empty before)."""
    obj = tree.parent_get(TOP, DEPLOY)
    assert obj is not None
    status = dict(obj.get("status") or {})
    return status if status.get("observedGeneration") == obj["metadata"]["generation"] else {}


def active_placements(tree: Tree) -> list[str]:
    with tree.parent.client() as c:
        return sorted(p["name"] for p in c.get(f"/placement/v1/spaces/{TOP}/placements").json()["items"])


def test_one_apply_at_the_top_reaches_every_leaf_and_ready_replicas_come_home(tree: Tree) -> None:
    parent = tree.parent
    parent.create_space(TOP)
    manifest = yaml.safe_dump_all(top_documents(replicas=2))
    parent.kubectl("apply", "-f", "-", space=TOP, input=manifest)

    # Down: the parent places web and the fan-out placement on both child hubs; each child hub places web on
    # its two clusters.
    wait_for(lambda: all_leaves(tree, 2), timeout=90, message="web with 2 ready replicas in all four leaves")
    for child in tree.child.values():
        fanout = tree.child_get(child, FANOUT)
        assert fanout is not None, child.name
        annotations = fanout["metadata"].get("annotations") or {}
        assert CHILD_HUB_PLACEMENT not in annotations  # an ordinary placement there
        assert annotations["spacehub.io/sync-target"] == child.name  # the parent's syncer's marks
        assert fanout["metadata"]["labels"]["spacehub.io/managed"] == "true"
        wait_for(lambda child=child: ((tree.child_get(child, FANOUT) or {}).get("status") or {})  # type: ignore[misc]
                 .get("destinationCount") == 2, timeout=30, message=f"to-leaves reaching 2 clusters in {child.name}")
    # At the parent the fan-out placement is an object it placed, not a placement of its own; its status there
    # is the child hubs' (aggregated).
    assert active_placements(tree) == ["to-hubs"]
    wait_for(lambda: ((tree.parent_get(TOP, FANOUT) or {}).get("status") or {}).get("destinationCount") == 2,
             timeout=30, message="to-leaves at the top with the child hubs' status")

    # Up: each child hub aggregates its two leaves; the parent aggregates the two child hubs.
    status = wait_for(lambda: (s := top_status(tree)).get("readyReplicas") == 2 and s.get("replicas") == 2 and s,
                      timeout=60, message="readyReplicas 2 on the top object")
    assert status["availableReplicas"] == 2 and status["updatedReplicas"] == 2
    top = tree.parent_get(TOP, DEPLOY)
    assert top is not None and top["metadata"]["annotations"][COUNT] == "2"
    rollout = parent.kubectl("rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s", space=TOP)
    assert "successfully rolled out" in rollout.stdout
    for child in tree.child.values():
        middle = tree.child_get(child, DEPLOY)
        assert middle is not None and middle["metadata"]["annotations"][COUNT] == "2"  # the child's own count
    # A child hub reports what it can: no pods (its space lists its clusters' pods but cannot watch them).
    def reported() -> list[dict[str, Any]]:
        with parent.client() as c:
            view = c.get(f"/placement/v1/spaces/{TOP}/namespaces/shop/objects/deployments.apps/web").json()
        return list(view["reported"])
    wait_for(lambda: sorted(r["cluster"] for r in reported() if r["status"] and r["associated"] is None)
             == sorted(tree.children), timeout=30, message="both child hubs reporting web without what it owns")

    # The child hubs as clusters: Ready, with the summed capacity of their clusters (2 nodes of 8 CPUs each).
    def capacities() -> dict[str, str | None]:
        with parent.client() as c:
            items = c.get("/placement/v1/clusters").json()["items"]
        return {i["name"]: i["allocatable"].get("cpu") for i in items if i["ready"]}
    wait_for(lambda: capacities() == {name: str(16 * tree.leaves) for name in tree.children}, timeout=30,
             message="each child hub Ready with its clusters' allocatable CPU")

    # A change at the top goes all the way down, and its status all the way up.
    parent.kubectl("scale", "deployment/web", "-n", "shop", "--replicas=3", space=TOP)
    wait_for(lambda: all_leaves(tree, 3), timeout=60, message="web scaled to 3 in all four leaves")
    wait_for(lambda: (s := top_status(tree)).get("readyReplicas") == 3 and s.get("replicas") == 3, timeout=60,
             message="readyReplicas 3 on the top object")

    # A leaf that cannot pull the new image: its Warning Events, recorded on the object by its child hub, are
    # forwarded again to the top, and the top's rollout is not done.
    leaf = tree.child["child-b"].sim
    leaf.set_faults("wec2", imagePullFailures=["*:broken"])
    parent.kubectl("set", "image", "deployment/web", "web=library/httpd:broken", "-n", "shop", space=TOP)

    def described() -> str | None:
        out = parent.kubectl("describe", "deployment", "web", "-n", "shop", space=TOP).stdout
        return out if "cluster child-b: cluster wec2 Pod/web-" in out else None
    story = wait_for(described, timeout=60, message="wec2's pull failure in kubectl describe at the top")
    assert 'Failed to pull image "library/httpd:broken"' in story
    wait_for(lambda: top_status(tree).get("updatedReplicas", 3) < 3, timeout=30,
             message="the top's status no longer fully updated")
    not_done = parent.kubectl("rollout", "status", "deployment/web", "-n", "shop", "--timeout=2s", space=TOP,
                              check=False)
    assert not_done.returncode != 0

    # Deleting at the top removes it everywhere.
    parent.kubectl("delete", "deployment/web", "-n", "shop", space=TOP)
    wait_for(lambda: all(tree.leaf_get(child, cluster, DEPLOY) is None for child, cluster in tree.leaves_of()),
             timeout=60, message="web gone from all four leaves")
    assert all(tree.child_get(child, DEPLOY) is None for child in tree.child.values())

    # Without its annotation the fan-out placement is the parent's own: it leaves the child hubs.
    parent.kubectl("annotate", "edgeplacement/to-leaves", f"{CHILD_HUB_PLACEMENT}-", space=TOP)
    wait_for(lambda: all(tree.child_get(child, FANOUT) is None for child in tree.child.values()), timeout=30,
             message="to-leaves gone from both child hubs")
    wait_for(lambda: active_placements(tree) == ["to-hubs", "to-leaves"], timeout=10,
             message="to-leaves a placement of the parent")
