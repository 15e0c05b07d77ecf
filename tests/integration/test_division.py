"""Replica division, end to end: the real hub, ``spacehub syncer run`` processes and ``spacehub sim serve``
clusters of different sizes (florin 2 CPUs, guilder 8), driven with kubectl.

A Deployment of 10 replicas divided by capacity runs 2 on florin and 8 on guilder; ``kubectl scale`` re-divides;
the space's status is the fleet's sum; the REST API and the PlacementStatus show the split.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import World, deployment, namespace, placement

WEB = "/apis/apps/v1/namespaces/app/deployments/web"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2, sim_args=("--node-cpu", "wec1=2", "--node-cpu", "wec2=8",
                                               "--ready-delay", "0")).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.join("guilder", "wec2", {"env": "prod"})
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
