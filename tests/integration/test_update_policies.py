"""Update and removal policies, end to end (the real hub, ``spacehub syncer run`` and ``spacehub sim serve``).

Create-only objects are made once and then belong to the cluster; orphaned objects stay in the cluster when
they are no longer placed; an object the cluster already had from somebody else is never overwritten unless
the space's object asks to adopt it — and the refusal is reported where users look.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.syncer_harness import World, cm_path, configmap, namespace, placement

EDGE = "edge.kubestellar.io/v2alpha1"
MANAGED = "spacehub.io/managed"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=1).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.hub.create_space("common")
    yield w
    w.close()


def annotated(name: str, annotations: dict[str, str], **data: str) -> dict[str, Any]:
    doc = configmap(name, "app", **data)
    doc["metadata"]["annotations"] = annotations
    return doc


def app_placement() -> dict[str, Any]:
    return placement("app", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}])


def labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def test_a_create_only_object_is_made_once_and_then_left_to_the_cluster(world: World) -> None:
    seed = annotated("seed", {"edge.kubestellar.io/downsync-overwrite": "false"}, value="initial")
    world.apply("common", namespace("app"), seed, app_placement())
    world.wait_present("florin", cm_path("app", "seed"), check=lambda o: o["data"] == {"value": "initial"})

    # The cluster's users change it: nothing puts it back. The space changes it: nothing is sent.
    world.sim.kubectl("wec1", "patch", "configmap", "seed", "-n", "app", "--type=merge", "-p",
                      '{"data":{"value":"tuned in the cluster"}}')
    world.apply("common", annotated("seed", {"edge.kubestellar.io/downsync-overwrite": "false"}, value="second"),
                configmap("marker", "app", value="after"))
    world.wait_present("florin", cm_path("app", "marker"))  # the syncer has seen what came after
    seed_now = world.get("florin", cm_path("app", "seed"))
    assert seed_now is not None and seed_now["data"] == {"value": "tuned in the cluster"}

    # Deleted in the cluster: it is missing, so it is created again, from the space's current content.
    world.sim.kubectl("wec1", "delete", "configmap", "seed", "-n", "app")
    world.wait_present("florin", cm_path("app", "seed"), check=lambda o: o["data"] == {"value": "second"})


def test_an_orphaned_object_stays_in_the_cluster_without_marks_when_no_longer_placed(world: World) -> None:
    keep = annotated("keep", {"spacehub.io/removal-policy": "orphan"}, value="stays")
    world.apply("common", namespace("app"), keep, configmap("go", "app", value="goes"), app_placement())
    kept = world.wait_present("florin", cm_path("app", "keep"))
    assert labels(kept).get(MANAGED) == "true"
    world.wait_present("florin", cm_path("app", "go"))

    world.hub.kubectl("delete", "edgeplacement", "app", space="common")
    world.wait_absent("florin", cm_path("app", "go"))
    left = wait_for(lambda: (o := world.get("florin", cm_path("app", "keep"))) and MANAGED not in labels(o) and o,
                    timeout=30, message="keep left in the cluster without the syncer's marks")
    assert left["data"] == {"value": "stays"}
    annotations = left["metadata"].get("annotations") or {}
    assert "spacehub.io/sync-target" not in annotations and "spacehub.io/space" not in annotations


def test_an_object_the_cluster_already_has_is_not_taken_over_unless_adopted(world: World) -> None:
    world.sim.kubectl("wec1", "create", "namespace", "app")
    world.sim.kubectl("wec1", "create", "configmap", "settings", "-n", "app", "--from-literal=value=local")
    world.apply("common", namespace("app"), configmap("settings", "app", value="from the hub"), app_placement())

    def condition() -> dict[str, Any] | None:
        obj = world.hub_get("common", f"/apis/{EDGE}/edgeplacements/app") or {}
        return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "NotAdopted"), None)
    refused = wait_for(condition, timeout=30, message="the NotAdopted condition on the EdgePlacement")
    assert "configmaps app/settings on florin" in refused["message"]
    events = yaml.safe_load(world.hub.kubectl("get", "events", "-n", "app", "--field-selector",
                                              "involvedObject.name=settings,reason=NotAdopted", "-o", "yaml",
                                              space="common").stdout)["items"]
    assert events and "was not made by spacehub" in events[0]["message"]
    local = world.get("florin", cm_path("app", "settings"))
    assert local is not None and local["data"] == {"value": "local"} and MANAGED not in labels(local)

    # Asked to adopt it, the syncer takes it over; the condition goes.
    world.apply("common", annotated("settings", {"spacehub.io/adopt": "true"}, value="from the hub"))
    world.wait_present("florin", cm_path("app", "settings"),
                       check=lambda o: o["data"] == {"value": "from the hub"} and labels(o).get(MANAGED) == "true")
    wait_for(lambda: condition() is None, timeout=30, message="the NotAdopted condition cleared")
