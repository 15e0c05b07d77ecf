"""Choosing clusters, end to end: a real hub, ``spacehub sim serve --with-syncers`` (12 clusters in 4 zones, each
with its syncer, talking to the hub over HTTP), kubectl and the ``spacehub`` commands.

``numberOfClusters: 4`` with zone spread ``maxSkew: 1`` and a Capacity prioritizer lands one copy per zone, on each
zone's largest cluster; a ``NoExecute`` taint moves that zone's copy to another cluster of the same zone; a new,
larger cluster moves nothing (the choice is kept) until ``spacehub placement reschedule``; explain, the REST API and
``kubectl get edgeplacements -o wide`` show the choice and the scores; bad fields are refused with their paths.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.syncer_harness import World, deployment, namespace

SPACE = "edge"
WEB = "/apis/apps/v1/namespaces/app/deployments/web"
ZONES = {f"wec{i}": f"z{(i - 1) // 3}" for i in range(1, 13)}  # wec1-3 in z0, wec4-6 in z1, …
LARGEST = {"z0": "wec2", "z1": "wec5", "z2": "wec8", "z3": "wec11"}  # twice the CPU of their zone's others
SYNC_TARGETS = "/apis/edge.kubestellar.io/v2alpha1/synctargets"
MAKE_BEFORE_BREAK = importlib.util.find_spec("placement.moves") is not None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("scheduling"), clusters=12)
    labels = [arg for name, zone in ZONES.items() for arg in ("--cluster-label", f"{name}:zone={zone}")]
    cpus = [arg for name in LARGEST.values() for arg in ("--node-cpu", f"{name}=16")]
    w.sim.extra_args = ("--hub", w.hub.base_url, "--hub-kubeconfig", str(w.hub.kubeconfig), "--with-syncers",
                        "--cluster-label", "env=edge", *labels, *cpus, "--ready-delay", "1", "--processes", "1")
    w.start()
    w.hub.create_space(SPACE)
    yield w
    w.close()


def edge_placement(**scheduling: Any) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": "web"},
            "spec": {"locationSelectors": [{"matchLabels": {"env": "edge"}}],
                     "downsync": [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]},
                                  {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["app"]}],
                     **scheduling}}


SCHEDULED = edge_placement(numberOfClusters=4, spreadConstraints=[{"topologyKey": "zone", "maxSkew": 1}],
                           prioritizers=[{"type": "Capacity", "weight": 2}])


def scheduling(world: World) -> dict[str, Any]:
    with world.hub.client() as c:
        r = c.get(f"/placement/v1/spaces/{SPACE}/placements/web/scheduling")
    assert r.status_code == 200, r.text
    return dict(r.json())


def stored_choice(world: World) -> list[str]:
    found = world.hub_get(SPACE, "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/web") or {}
    return list(((found.get("status") or {}).get("scheduling") or {}).get("clusters") or [])


def ready_copies(world: World) -> set[str]:
    out = set()
    for cluster in ZONES:
        obj = world.get(cluster, WEB)
        if obj is not None and ((obj.get("status") or {}).get("availableReplicas") or 0) >= 1:
            out.add(cluster)
    return out


def test_bad_scheduling_fields_are_refused_with_their_field_paths(world: World) -> None:
    for fields, path in [({"numberOfClusters": -1}, "spec.numberOfClusters"),
                         ({"spreadConstraints": [{"topologyKey": "zone", "maxSkew": 0}]},
                          "spec.spreadConstraints[0].maxSkew"),
                         ({"prioritizers": [{"type": "Random"}]}, "spec.prioritizers[0].type"),
                         ({"prioritizers": [{"type": "CEL", "expression": "cluster.name +"}]},
                          "spec.prioritizers[0].expression"),
                         ({"prioritizers": [{"type": "CEL", "expression": "'a'"}]}, "spec.prioritizers[0].expression"),
                         ({"tolerations": [{"key": "k", "effect": "Later"}]}, "spec.tolerations[0].effect")]:
        bad = edge_placement(**fields)
        bad["metadata"]["name"] = "bad"
        proc = world.hub.kubectl("apply", "-f", "-", space=SPACE, input=yaml.safe_dump(bad), check=False)
        assert proc.returncode != 0 and path in proc.stderr and "is invalid" in proc.stderr, (fields, proc.stderr)
    assert world.hub_get(SPACE, "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/bad") is None
    bad_taint = world.hub.spacehub("cluster", "taint", "wec1", "k=v:Sometimes", check=False)
    assert bad_taint.returncode != 0 and "invalid taint" in bad_taint.stderr
    with world.hub.client() as c:
        r = c.post("/placement/v1/clusters/wec1:taint", json={"add": [{"key": "k", "effect": "Sometimes"}]})
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "add[0].effect"


def test_four_of_twelve_one_per_zone_moved_by_a_taint_kept_against_a_better_cluster_until_rescheduled(
        world: World) -> None:
    # Every cluster's capacity has come with its syncer's heartbeats before the placement chooses.
    wait_for(lambda: all(((world.hub_get("inventory", f"{SYNC_TARGETS}/{c}") or {}).get("status") or {})
                         .get("allocatable") for c in ZONES), timeout=60, message="every cluster's capacity")
    world.apply(SPACE, namespace("app"), deployment("web", "app", replicas=1), SCHEDULED)
    first = sorted(LARGEST.values())
    wait_for(lambda: ready_copies(world) == set(first), timeout=90, message="web ready on each zone's largest cluster")
    assert stored_choice(world) == first
    view = scheduling(world)
    rows = {r["cluster"]: r for r in view["candidates"]}
    assert view["chosen"] == first and view["wanted"] == 4 and view["condition"]["status"] == "True"
    assert rows["wec2"]["scores"] == {"Capacity": 100.0} and rows["wec2"]["score"] == 200.0
    # Half the CPU, the same memory: (50 + 100) / 2.
    assert rows["wec1"]["reason"] == "Outscored" and rows["wec1"]["scores"]["Capacity"] == 75.0

    wide = world.hub.kubectl("get", "edgeplacements", "-o", "wide", space=SPACE).stdout.splitlines()
    assert "CLUSTERS" in wide[0].split() and ",".join(first) in wide[1].split(), wide
    explained = world.hub.spacehub("placement", "explain", "web", "--space", SPACE).stdout
    assert "CAPACITY" in explained and "Outscored" in explained and "4 of 4 clusters chosen" in explained

    # NoExecute on z1's choice: its copy moves to the best other cluster of z1 (equal scores: the lower name).
    # Where the hub moves objects make-before-break (placement.moves), z1 never lacks a ready copy meanwhile.
    world.hub.spacehub("cluster", "taint", "wec5", "maintenance=now:NoExecute")
    moved = sorted([*(set(first) - {"wec5"}), "wec4"])
    fewest = 4 if MAKE_BEFORE_BREAK else 3

    def moved_there() -> bool:
        copies = ready_copies(world)
        assert len(copies) >= fewest, f"fewer than {fewest} ready copies during the move: {copies}"
        return copies == set(moved) and world.get("wec5", WEB) is None
    wait_for(moved_there, timeout=90, message="z1's copy moved from wec5 to wec4")
    assert stored_choice(world) == moved
    assert {r["cluster"]: r["reason"] for r in scheduling(world)["candidates"]}["wec5"] == "Tainted"

    # A new cluster in z1 with far more capacity: nothing moves (the choice is kept) …
    world.hub.spacehub("cluster", "register", "big", "--label", "env=edge", "--label", "zone=z1",
                       "--bootstrap-out", str(world.base / "big-bootstrap.yaml"))
    patch = {"status": {"allocatable": {"cpu": "256", "memory": "1Ti"}}}
    world.hub.kubectl("patch", "synctargets", "big", "--subresource=status", "--type=merge", "-p",
                      yaml.safe_dump(patch), space="inventory")
    wait_for(lambda: {r["cluster"]: r["reason"] for r in scheduling(world)["candidates"]}.get("big") == "Steady",
             timeout=30, message="big seen as a better, unchosen cluster")
    assert stored_choice(world) == moved and ready_copies(world) == set(moved)

    # … until a reschedule: z1's best is now big.
    world.hub.spacehub("placement", "reschedule", "web", "--space", SPACE)
    wait_for(lambda: stored_choice(world) == sorted([*(set(first) - {"wec5"}), "big"]), timeout=30,
             message="big chosen after the reschedule")
    with world.hub.client() as c:
        desired = c.get("/placement/v1/clusters/big/desired").json()
    assert any(e["name"] == "web" for e in desired["items"])
    world.hub.spacehub("cluster", "taint", "wec5", "maintenance-")
