"""A space's objects reach clusters when an EdgePlacement arrives after them, before and after a hub restart.

Placement records a space's objects only while the space has an EdgePlacement (``placement.recording``): the
objects written before the first one are read from the store when it arrives. End to end: the real hub, a
``spacehub sim serve`` cluster and its ``spacehub syncer run``, everything written through the hub's API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.syncer_harness import World, cm_path, configmap, namespace, placement

DOWNSYNC = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=1).start()
    w.join("wec1", "wec1", {"env": "prod"})
    yield w
    w.close()


def object_view(world: World, space: str, name: str) -> httpx.Response:
    with world.hub.client() as c:
        return c.get(f"/placement/v1/spaces/{space}/namespaces/app/objects/configmaps/{name}")


def test_objects_written_before_the_first_placement_are_placed_by_it_and_leave_with_the_last(world: World) -> None:
    world.hub.create_space("team")
    world.apply("team", namespace("app"), configmap("settings", "app", v="1"), configmap("more", "app", v="1"))
    unplaced = object_view(world, "team", "settings")  # known to the placement API, placed nowhere
    assert unplaced.status_code == 200, unplaced.text
    assert unplaced.json()["destinations"] == [] and unplaced.json()["kind"] == "ConfigMap"
    assert object_view(world, "team", "absent").status_code == 404

    world.apply("team", placement("p", {"env": "prod"}, DOWNSYNC))
    placed = world.wait_present("wec1", cm_path("app", "settings"))
    assert placed["data"] == {"v": "1"}
    world.wait_present("wec1", cm_path("app", "more"))
    assert object_view(world, "team", "settings").json()["destinations"] == ["wec1"]

    world.apply("team", configmap("settings", "app", v="2"))  # followed while the space has its placement
    world.wait_present("wec1", cm_path("app", "settings"), check=lambda o: o.get("data") == {"v": "2"})

    world.hub.kubectl("delete", "edgeplacement", "p", space="team")
    world.wait_absent("wec1", cm_path("app", "settings"))
    world.wait_absent("wec1", cm_path("app", "more"))
    after = object_view(world, "team", "settings")
    assert after.status_code == 200 and after.json()["destinations"] == []

    world.apply("team", placement("again", {"env": "prod"}, DOWNSYNC))  # the space is read again
    world.wait_present("wec1", cm_path("app", "settings"), check=lambda o: o.get("data") == {"v": "2"})


def test_after_a_restart_placed_spaces_stay_placed_and_an_unplaced_ones_objects_go_with_its_first_placement(
        world: World) -> None:
    world.hub.create_space("placed")
    world.hub.create_space("later")
    world.apply("placed", namespace("app"), configmap("kept", "app", v="1"),
                placement("p", {"env": "prod"}, DOWNSYNC))
    world.apply("later", namespace("app"), configmap("waiting", "app", v="1"))
    world.wait_present("wec1", cm_path("app", "kept"))

    world.hub.stop()
    world.hub.start()

    world.apply("later", placement("p", {"env": "prod"}, DOWNSYNC))
    world.wait_present("wec1", cm_path("app", "waiting"), timeout=60)
    assert world.get("wec1", cm_path("app", "kept")) is not None  # the placed space's objects stayed
    world.apply("placed", configmap("kept", "app", v="2"))  # and its objects are still followed
    world.wait_present("wec1", cm_path("app", "kept"), check=lambda o: o.get("data") == {"v": "2"})
