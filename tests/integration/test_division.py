"""Replica division, end to end: the real hub, ``spacehub syncer run`` processes and ``spacehub sim serve``
clusters of different sizes (florin 2 CPUs, guilder 8), driven with kubectl.

A Deployment of 10 replicas divided by capacity runs 2 on florin and 8 on guilder; ``kubectl scale`` re-divides;
the space's status is the fleet's sum; the REST API and the PlacementStatus show the split. A scheduled
placement's Capacity score counts only what the divided replicas leave free, as they are when it chooses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import World, configmap, deployment, namespace, placement

WEB = "/apis/apps/v1/namespaces/app/deployments/web"
SYNC_TARGETS = "/apis/edge.kubestellar.io/v2alpha1/synctargets"
HPA = "/apis/autoscaling/v2/namespaces/app/horizontalpodautoscalers/web"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2, sim_args=("--node-cpu", "wec1=2", "--node-cpu", "wec2=8",
                                               "--ready-delay", "0")).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.join("guilder", "wec2", {"env": "prod", "size": "big"})
    w.hub.create_space("common")
    yield w
    w.close()


def divided_web(replicas: int) -> dict[str, Any]:
    doc = deployment("web", "app", replicas=replicas)
    doc["metadata"]["annotations"] = {"spacehub.io/replica-division": "capacity"}
    doc["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    return doc


def replicas_on(world: World) -> dict[str, int | None]:
    return {cluster: (obj or {}).get("spec", {}).get("replicas") if (obj := world.get(cluster, WEB)) else None
            for cluster in ("florin", "guilder")}


def test_replicas_are_divided_by_capacity_redivided_on_scale_and_summed_back(world: World) -> None:
    spread = placement("web", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                  "namespaces": ["app"]}])
    spread["spec"]["wantMultiWECReportedState"] = True
    world.apply("common", namespace("app"), divided_web(10), spread)
    wait_for(lambda: replicas_on(world) == {"florin": 2, "guilder": 8}, timeout=60,
             message="10 replicas divided 2/8 by capacity (2 and 8 CPUs)")

    view = world.placement_view("common", "app", "deployments.apps", "web")
    assert view["division"] == {"florin": 2, "guilder": 8}
    summary = wait_for(lambda: world.hub_get("common", "/apis/status.spacehub.io/v1alpha1/namespaces/app/"
                                                       "placementstatuses/deployments.apps.web"),
                       timeout=30, message="the PlacementStatus")
    wait_for(lambda: {c["name"]: c.get("replicas") for c in (world.hub_get(
        "common", "/apis/status.spacehub.io/v1alpha1/namespaces/app/placementstatuses/deployments.apps.web")
        or summary).get("clusters") or []} == {"florin": 2, "guilder": 8}, timeout=30,
        message="each cluster's share in the PlacementStatus")

    # The space's status is the sum over the clusters, so kubectl sees the whole Deployment ready.
    wait_for(lambda: ((world.hub_get("common", WEB) or {}).get("status") or {}).get("readyReplicas") == 10,
             timeout=60, message="readyReplicas summed to 10")
    world.hub.kubectl("rollout", "status", "deployment/web", "-n", "app", "--timeout=60s", space="common")

    world.hub.kubectl("scale", "deployment", "web", "-n", "app", "--replicas", "15", space="common")
    wait_for(lambda: replicas_on(world) == {"florin": 3, "guilder": 12}, timeout=60,
             message="15 replicas re-divided 3/12")
    wait_for(lambda: ((world.hub_get("common", WEB) or {}).get("status") or {}).get("readyReplicas") == 15,
             timeout=60, message="readyReplicas summed to 15")
    assert world.placement_view("common", "app", "deployments.apps", "web")["division"] == {"florin": 3,
                                                                                            "guilder": 12}


def stored_choice(world: World, name: str) -> list[str]:
    found = world.hub_get("common", f"/apis/edge.kubestellar.io/v2alpha1/edgeplacements/{name}") or {}
    return list(((found.get("status") or {}).get("scheduling") or {}).get("clusters") or [])


def test_capacity_scores_count_what_divided_replicas_leave_free(world: World) -> None:
    wait_for(lambda: all(((world.hub_get("inventory", f"{SYNC_TARGETS}/{c}") or {}).get("status") or {})
                         .get("allocatable") for c in ("florin", "guilder")), timeout=60,
             message="both clusters' capacity")
    # 130 replicas of 100m on guilder alone: 13 of its 16 allocatable CPUs requested, florin's 4 all free.
    big = placement("web", {"size": "big"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                              "namespaces": ["app"]}])
    world.apply("common", namespace("app"), divided_web(130), big)
    wait_for(lambda: world.placement_view("common", "app", "deployments.apps", "web")["division"] == {"guilder": 130},
             timeout=60, message="130 replicas on guilder")
    chooser = placement("settings", {"env": "prod"}, [{"resources": ["configmaps"], "namespaces": ["app"]}])
    chooser["spec"].update(numberOfClusters=1, prioritizers=[{"type": "Capacity"}])
    world.apply("common", configmap("settings", "app", a="1"), chooser)
    wait_for(lambda: stored_choice(world, "settings") == ["florin"], timeout=60,
             message="florin chosen: 4 CPUs free against guilder's 3")
    # Scaled down, guilder has 15 CPUs free: the choice is kept (Steady) until a reschedule, which sees them.
    world.hub.kubectl("scale", "deployment", "web", "-n", "app", "--replicas", "10", space="common")
    wait_for(lambda: world.placement_view("common", "app", "deployments.apps", "web")["division"] == {"guilder": 10},
             timeout=60, message="10 replicas on guilder")
    assert stored_choice(world, "settings") == ["florin"]
    world.hub.spacehub("placement", "reschedule", "settings", "--space", "common")
    wait_for(lambda: stored_choice(world, "settings") == ["guilder"], timeout=60,
             message="guilder chosen after the reschedule")


def test_a_space_hpa_scales_the_divided_fleet_total_from_the_clusters_cpu_use(world: World) -> None:
    """A HorizontalPodAutoscaler in the space (not placed) targets the divided Deployment: the hub measures the
    pods' CPU use in both clusters (metrics-server's PodMetrics, here from the simulator's cpuLoad, through the
    tunnels), scales the fleet total from 4 to 8, and the division by capacity runs again."""
    world.apply("common", namespace("app"), divided_web(4),
                placement("web", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                    "namespaces": ["app"]}]))
    wait_for(lambda: replicas_on(world) == {"florin": 1, "guilder": 3}, timeout=60, message="4 divided 1/3")
    wait_for(lambda: ((world.hub_get("common", WEB) or {}).get("status") or {}).get("readyReplicas") == 4,
             timeout=60, message="4 ready replicas")
    # florin's pod uses one request's worth of CPU, guilder's three share three: 400% over 4 pods at a 50% target.
    world.sim.set_faults("wec1", cpuLoad=100)
    world.sim.set_faults("wec2", cpuLoad=300)
    world.apply("common", {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 10, "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}})

    wait_for(lambda: replicas_on(world) == {"florin": 2, "guilder": 6}, timeout=60,
             message="8 replicas re-divided 2/6 by capacity")
    web = world.hub_get("common", WEB) or {}
    assert web["spec"]["replicas"] == 8
    assert "spacehub-fleet-autoscaler" in {f["manager"] for f in web["metadata"]["managedFields"]}
    hpa = world.hub_get("common", HPA) or {}
    conditions = {c["type"]: (c["status"], c["reason"]) for c in hpa["status"]["conditions"]}
    assert hpa["status"]["desiredReplicas"] == 8 and hpa["status"]["lastScaleTime"], hpa["status"]
    assert conditions["ScalingActive"] == ("True", "ValidMetricFound"), conditions
    assert world.get("florin", HPA) is None  # the space's HPA is not placed
    wait_for(lambda: ((world.hub_get("common", WEB) or {}).get("status") or {}).get("readyReplicas") == 8,
             timeout=60, message="8 ready replicas in the space's status")

    # Measured again (every 15 s): 400% over 8 pods is the 50% target, so the fleet stays at 8.
    def steady() -> bool:
        status = (world.hub_get("common", HPA) or {}).get("status") or {}
        metrics = status.get("currentMetrics") or [{}]
        return status.get("currentReplicas") == 8 and status.get("desiredReplicas") == 8 and \
            metrics[0].get("resource", {}).get("current", {}).get("averageUtilization") == 50
    wait_for(steady, timeout=40, message="the HPA's status at 8 replicas and 50% utilization")
    assert replicas_on(world) == {"florin": 2, "guilder": 6}
