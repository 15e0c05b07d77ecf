"""Taking clusters out, end to end: cordon, drain and failover through the real hub, ``spacehub syncer run``
processes and ``spacehub sim serve`` clusters (pods ready one second after they start).

Draining florin starts its divided replicas on guilder and removes everything from florin only once they
are ready there; a cluster whose syncer falls silent past the placement's ``failover.after`` has its divided
replicas run elsewhere, is left untouched while away, and gets them back when it returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import World, cm_path, configmap, deployment, namespace, placement

WEB = "/apis/apps/v1/namespaces/app/deployments/web"
SETTINGS = cm_path("app", "settings")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2, hub_args=("--syncer-heartbeat-timeout", "3"),
              sim_args=("--ready-delay", "1")).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.join("guilder", "wec2", {"env": "prod"})
    w.hub.create_space("common")
    yield w
    w.close()


def place_web(world: World, **spec: Any) -> None:
    web = deployment("web", "app", replicas=10)
    web["metadata"]["annotations"] = {"spacehub.io/replica-division": "even"}
    spread = placement("web", {"env": "prod"}, [
        {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]},
        {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}])
    spread["spec"].update(wantMultiWECReportedState=True, **spec)
    world.apply("common", namespace("app"), web, configmap("settings", "app", value="x"), spread)


def replicas(world: World) -> dict[str, int | None]:
    return {c: (obj["spec"]["replicas"] if (obj := world.get(c, WEB)) else None) for c in ("florin", "guilder")}


def available(world: World, cluster: str) -> int:
    obj = world.get(cluster, WEB) or {}
    return int((obj.get("status") or {}).get("availableReplicas") or 0)


def test_a_drained_cluster_is_emptied_only_once_its_replicas_run_elsewhere(world: World) -> None:
    place_web(world)
    wait_for(lambda: replicas(world) == {"florin": 5, "guilder": 5} and available(world, "florin") == 5, timeout=60,
             message="5 and 5 replicas, florin's available")
    world.hub.spacehub("cluster", "drain", "florin")

    # Until guilder runs all 10, florin keeps its 5: the fleet never runs fewer than asked.
    def emptied() -> bool:
        florin = world.get("florin", WEB)
        if florin is None:
            assert available(world, "guilder") == 10, "florin emptied before guilder ran its replicas"
            return world.get("florin", SETTINGS) is None
        assert available(world, "florin") + available(world, "guilder") >= 10 or florin["spec"]["replicas"] == 5
        return False
    wait_for(emptied, timeout=60, message="florin emptied after guilder runs 10")
    assert replicas(world) == {"florin": None, "guilder": 10}
    with world.hub.client() as c:
        florin = c.get("/placement/v1/clusters/florin").json()
    assert florin["unschedulable"] is True and florin["evictAfter"]

    # Taken back: florin gets its share and the settings again.
    world.hub.spacehub("cluster", "uncordon", "florin")
    wait_for(lambda: replicas(world) == {"florin": 5, "guilder": 5} and world.get("florin", SETTINGS) is not None,
             timeout=60, message="5 and 5 again after uncordon")


def test_a_lost_cluster_fails_over_its_divided_replicas_and_gets_them_back(world: World) -> None:
    place_web(world, failover={"after": "1s"})
    wait_for(lambda: replicas(world) == {"florin": 5, "guilder": 5}, timeout=60, message="5 and 5 replicas")

    world.syncers["florin"].kill()  # no more heartbeats: Ready=False after 3 s, failover 1 s later
    wait_for(lambda: replicas(world)["guilder"] == 10 and available(world, "guilder") == 10, timeout=20,
             message="guilder runs all 10 while florin is lost")
    assert replicas(world)["florin"] == 5  # nothing changed in the lost cluster
    wait_for(lambda: (((world.hub_get("common", WEB) or {}).get("status") or {}).get("readyReplicas") or 0) >= 10,
             timeout=20, message="the space counting guilder's 10 ready replicas")

    world.syncers["florin"].start()
    wait_for(lambda: replicas(world) == {"florin": 5, "guilder": 5}, timeout=60,
             message="florin back: 5 and 5 again")


def test_an_object_naming_its_target_clusters_goes_only_there_and_moves_when_renamed(world: World) -> None:
    pinned = configmap("pinned", "app", value="only here")
    pinned["metadata"]["annotations"] = {"spacehub.io/target-clusters": "guilder"}
    spread = placement("all", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}])
    world.apply("common", namespace("app"), pinned, configmap("everywhere", "app", value="x"), spread)
    world.wait_present("guilder", cm_path("app", "pinned"))
    world.wait_present("florin", cm_path("app", "everywhere"))
    assert world.get("florin", cm_path("app", "pinned")) is None
    assert world.placement_view("common", "app", "configmaps", "pinned")["destinations"] == ["guilder"]

    pinned["metadata"]["annotations"] = {"spacehub.io/target-clusters": "florin"}
    world.apply("common", pinned)
    world.wait_present("florin", cm_path("app", "pinned"))
    world.wait_absent("guilder", cm_path("app", "pinned"))
