"""KubeStellar example1, stage 4, end to end: what each workload cluster runs once both spaces are placed.

A real hub, ``spacehub sim serve`` clusters wec1/wec2 registered as florin (``env=prod``) and guilder
(``env=prod, extended=yes``) with ``spacehub syncer run`` processes, everything applied with kubectl. The
special placement has ``crdFollow: true`` and no test for the CronTab CRD: the CronTab takes its CRD along.
The APIService is a plain stored kind in the space; in guilder it is not available, as in a real cluster
that has no ``my-service``. A placement naming a resource no space serves says so instead of staying empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.example1 import (
    APISERVICE,
    COMMOND,
    CRONTAB,
    CRONTAB_CRD,
    EDGE,
    SPECIALD,
    common_workload,
    crontab,
    env_value,
    example1_world,
    special_workload,
    text,
)
from tests.harness import wait_for
from tests.syncer_harness import World, cm_path, placement


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with example1_world(tmp_path, "common", "special") as w:
        yield w


def site_text(cluster: str, kind: str) -> str:
    return f"This is a {kind} web site. Running in {cluster}, 100% customized."


def placement_status(world: World, space: str, name: str) -> dict[str, Any]:
    return (world.hub_get(space, f"/apis/{EDGE}/edgeplacements/{name}") or {}).get("status") or {}


def test_stage_4_each_cluster_runs_what_its_placements_send(world: World) -> None:
    world.apply("common", *common_workload())
    world.apply("special", *special_workload())
    # The CronTab needs its CRD established in the space before kubectl can map it.
    world.hub.kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s",
                      space="special")
    world.apply("special", crontab())

    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("commonstuff", "httpd-htdocs"),
                           check=lambda o, c=cluster: text(o) == site_text(c, "common"))
        world.wait_present(cluster, COMMOND, check=lambda o: env_value(o) == "env is prod")
    world.wait_present("guilder", cm_path("specialstuff", "httpd-htdocs"),
                       check=lambda o: text(o) == site_text("guilder", "special"))
    world.wait_present("guilder", SPECIALD)
    world.wait_present("guilder", CRONTAB_CRD)
    cron = world.wait_present("guilder", CRONTAB)
    assert cron["spec"]["cronSpec"] == "* * * * */5"
    namespace = world.wait_present("guilder", "/api/v1/namespaces/specialstuff")
    assert namespace["metadata"]["labels"]["special"] == "yes"

    # The APIService arrived, and guilder says what any cluster without its Service says.
    world.wait_present("guilder", APISERVICE)
    out = wait_for(lambda: (o := world.sim.kubectl("wec2", "get", "apiservices", "v1090.example.my").stdout)
                   and "False (ServiceNotFound)" in o and o, timeout=30, message="guilder's APIService availability")
    assert "my-namespace/my-service" in out

    # florin has only the common workload.
    for path in (cm_path("specialstuff", "httpd-htdocs"), SPECIALD, APISERVICE, CRONTAB_CRD,
                 "/api/v1/namespaces/specialstuff"):
        assert world.get("florin", path) is None, path

    # The special placement selects the CRD through crdFollow, so nothing is reported missing.
    status = placement_status(world, "special", "edge-placement-s")
    assert status.get("missingCRDs") == [] and status.get("unservedResources") == []
    with world.hub.client() as c:
        detail = c.get("/placement/v1/spaces/special/placements/edge-placement-s").json()
    followed = [o for o in detail["objects"] if o["followed"]]
    assert [(o["resource"], o["name"], o["tests"]) for o in followed] == \
        [("customresourcedefinitions", "crontabs.stable.example.com", [])]

    # Deleting the only CronTab takes the followed CRD (and so the kind) off guilder.
    world.hub.kubectl("delete", "crontab", "my-new-cron-object", "-n", "specialstuff", space="special")
    world.wait_absent("guilder", CRONTAB_CRD)
    world.wait_present("guilder", SPECIALD)


def test_a_placement_naming_resources_nothing_serves_says_so(world: World) -> None:
    world.apply("special", placement("typo", {"env": "prod"}, [
        {"apiGroup": "apps", "resources": ["deployment"]},  # a kind, not the plural
        {"apiGroup": "stable.example.com", "resources": ["crontabs"]},  # its CRD is not in this space yet
    ]))

    def unserved() -> dict[str, Any] | None:
        status = placement_status(world, "special", "typo")
        return status if status.get("unservedResources") else None
    status = wait_for(unserved, timeout=30, message="unservedResources on the placement")
    assert status["unservedResources"] == ["crontabs.stable.example.com", "deployment.apps"]
    condition = next(c for c in status["conditions"] if c["type"] == "ResourcesUnserved")
    assert condition["status"] == "True" and "deployment.apps" in condition["message"]
    wide = world.hub.kubectl("get", "edgeplacement", "typo", "-o", "wide", space="special").stdout
    assert "crontabs.stable.example.com" in wide

    # Creating the CRD in the space serves one of them; the report follows.
    world.apply("special", *[d for d in special_workload() if d["kind"] == "CustomResourceDefinition"])
    wait_for(lambda: placement_status(world, "special", "typo").get("unservedResources") == ["deployment.apps"],
             timeout=30, message="the CRD's resource no longer unserved")
    with world.hub.client() as c:
        listed = c.get("/placement/v1/spaces/special/placements").json()["items"]
    assert next(p for p in listed if p["name"] == "typo")["unservedResources"] == ["deployment.apps"]
