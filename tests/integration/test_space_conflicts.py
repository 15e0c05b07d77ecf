"""Two spaces placing one cluster object with different content, end to end (real hub, syncer, simulator).

The object created first wins on the cluster; every EdgePlacement involved says so, the REST API names the
spaces, the cluster and the differing fields, and both objects' stories have a Warning Event. When the
winner goes, the other copy takes over the cluster object without it ever being deleted.
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
CONFIG = cm_path("shared", "config")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=1).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.hub.create_space("team-a")
    w.hub.create_space("team-b")
    yield w
    w.close()


def shared_placement() -> dict[str, Any]:
    return placement("shared", {"env": "prod"},
                     [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["shared"]}])


def conflict_condition(world: World, space: str) -> dict[str, Any] | None:
    obj = world.hub_get(space, f"/apis/{EDGE}/edgeplacements/shared") or {}
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Conflict"), None)


def test_the_first_object_wins_everyone_is_told_and_the_other_takes_over_when_it_goes(world: World) -> None:
    world.apply("team-a", namespace("shared"), configmap("config", "shared", value="from team-a"), shared_placement())
    first = world.wait_present("florin", CONFIG, check=lambda o: o["data"] == {"value": "from team-a"})
    world.apply("team-b", namespace("shared"), configmap("config", "shared", value="from team-b"), shared_placement())

    for space in ("team-a", "team-b"):
        condition = wait_for(lambda s=space: conflict_condition(world, s), timeout=30,
                             message=f"the Conflict condition in {space}")
        assert "configmaps shared/config on florin: space team-a wins, space team-b differs at data.value" \
            in condition["message"]
    with world.hub.client() as c:
        listed = c.get("/placement/v1/conflicts").json()["items"]
    assert listed == [{"cluster": "florin", "group": "", "resource": "configmaps", "namespace": "shared",
                       "name": "config", "winner": "team-a", "loser": "team-b", "fields": ["data.value"]}]
    for space in ("team-a", "team-b"):
        def told(s: str = space) -> bool:
            events = yaml.safe_load(world.hub.kubectl("get", "events", "-n", "shared", "--field-selector",
                                                      "reason=ConflictingPlacement", "-o", "yaml", space=s).stdout)
            return any("space team-a wins" in e["message"] for e in events["items"])
        wait_for(told, timeout=30, message=f"a ConflictingPlacement Event in {space}")
    still = world.get("florin", CONFIG)
    assert still is not None and still["data"] == {"value": "from team-a"}

    # team-a's object goes: team-b's copy is applied to the same cluster object, never deleted in between.
    world.hub.kubectl("delete", "configmap", "config", "-n", "shared", space="team-a")
    taken = world.wait_present("florin", CONFIG, check=lambda o: o["data"] == {"value": "from team-b"})
    assert taken["metadata"]["uid"] == first["metadata"]["uid"]
    wait_for(lambda: conflict_condition(world, "team-b") is None, timeout=30, message="team-b's condition cleared")
    with world.hub.client() as c:
        assert c.get("/placement/v1/conflicts").json()["items"] == []
