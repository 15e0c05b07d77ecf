"""placement.autoscaling in-process: what a space's HPA says when the fleet autoscaler cannot measure or scale.

A hub core on SQLite (tests/hub_core.py) with two registered clusters and no syncers, so no tunnel reaches them;
the measured path (metrics read through the tunnels, the total scaled and re-divided) is end to end in
tests/integration/test_division.py.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

from hub.app import HubCore
from placement.autoscaling import pod_usage
from tests.hub_core import create, get, hub_core, placement
from tests.polling import eventually
from tests.syncer_harness import deployment, namespace


def hpa(name: str, target: str) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "app"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": 10}}


def divided(name: str, cpu: str | None) -> dict[str, Any]:
    obj = deployment(name, "app", replicas=4)
    obj["metadata"]["annotations"] = {"spacehub.io/replica-division": "even"}
    if cpu is not None:
        obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return obj


async def condition(core: HubCore, name: str, kind: str) -> tuple[str, str, str] | None:
    found = await get(core, "team", "autoscaling/v2", "HorizontalPodAutoscaler", name, "app") or {}
    for cond in (found.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond["status"], cond["reason"], cond["message"]
    return None


def test_an_hpa_the_fleet_autoscaler_cannot_act_on_says_why_and_changes_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.registration.register("florin", {"env": "prod"})
            await core.registration.register("guilder", {"env": "prod"})
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), divided("web", "100m"), divided("bare", None),
                         deployment("whole", "app", replicas=4),
                         placement("prod", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                             "namespaces": ["app"]}]),
                         hpa("web", "web"), hpa("bare", "bare"), hpa("whole", "whole"), hpa("gone", "missing"))

            web = await eventually(lambda: condition(core, "web", "ScalingActive"), message="web's HPA status")
            assert web[:2] == ("False", "FailedGetResourceMetric")
            assert "no cluster reported metrics (no metrics from florin, guilder)" in web[2], web
            bare = await eventually(lambda: condition(core, "bare", "ScalingActive"), message="bare's HPA status")
            assert "missing request for cpu" in bare[2], bare
            whole = await eventually(lambda: condition(core, "whole", "AbleToScale"), message="whole's status")
            assert whole[:2] == ("False", "NotDivided"), whole
            gone = await eventually(lambda: condition(core, "gone", "AbleToScale"), message="gone's status")
            assert gone[:2] == ("False", "FailedGetScale"), gone
            for name in ("web", "bare", "whole"):
                found = await get(core, "team", "apps/v1", "Deployment", name, "app") or {}
                assert found["spec"]["replicas"] == 4
    asyncio.run(scenario())


def test_pod_usage_sums_the_containers_cpu() -> None:
    body = {"items": [{"containers": [{"usage": {"cpu": "250m"}}, {"usage": {"cpu": "1"}}]},
                      {"containers": [{"usage": {"cpu": "500000n"}}]}, {"containers": []}]}
    assert pod_usage(body) == (Decimal("1250.5"), 3)
    assert pod_usage({"items": "nonsense"}) == (Decimal(0), 0) and pod_usage(None) == (Decimal(0), 0)
