"""Namespace mapping where it meets other spaces and where it cannot map (README "Inventory and placement"),
end to end: real hub, ``spacehub sim serve`` and a ``spacehub syncer run`` for cluster florin; kubectl is real.

- team-a maps its namespace ``app`` onto ``shared``, the name team-b places as it is: the two ConfigMaps named
  ``config`` are one cluster object, a conflict that the first one created wins;
- team-c's Space maps ``{{space}}-{{namespace}}``: a 60-character namespace renders a name over 63 characters,
  which the hub sends to no cluster and reports on the EdgePlacement (condition and Warning Event);
- team-c's namespace ``web`` is decided by placement ``a-first`` (explicit map) while it selects an object there;
  when it stops, the Space's default decides and the cluster's objects move, though none of them changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import EDGE, World, cm_path, configmap, namespace, placement

SPACE_API = "spacehub.io/v1alpha1"
LONG = "n" * 60  # team-c-<LONG> is 67 characters


def configmaps_in(name: str, ns: str, mapping: dict[str, Any] | None = None, **test: Any) -> dict[str, Any]:
    obj = placement(name, {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": [ns], **test}])
    if mapping is not None:
        obj["spec"]["namespaceMapping"] = mapping
    return obj


def condition(world: World, space: str, name: str, kind: str) -> dict[str, Any] | None:
    obj = world.hub_get(space, f"/apis/{EDGE}/edgeplacements/{name}") or {}
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("nsedges"), clusters=1).start()
    w.join("florin", "wec1", {"env": "prod"})
    for name in ("team-a", "team-b", "team-c"):
        w.hub.create_space(name)
    w.apply("root", {"apiVersion": SPACE_API, "kind": "Space", "metadata": {"name": "team-c"},
                     "spec": {"namespaceMapping": {"template": "{{space}}-{{namespace}}"}}})
    yield w
    w.close()


def test_a_namespace_mapped_onto_the_name_another_space_uses_unmapped_is_a_conflict(world: World) -> None:
    world.apply("team-a", namespace("app"), configmap("config", "app", value="from team-a"),
                configmaps_in("shared", "app", {"map": {"app": "shared"}}))
    first = world.wait_present("florin", cm_path("shared", "config"), timeout=60,
                               check=lambda o: o["data"] == {"value": "from team-a"})
    world.apply("team-b", namespace("shared"), configmap("config", "shared", value="from team-b"),
                configmaps_in("shared", "shared"))

    for space in ("team-a", "team-b"):
        found = wait_for(lambda s=space: condition(world, s, "shared", "Conflict"), timeout=30,
                         message=f"the Conflict condition in {space}")
        assert "configmaps shared/config on florin: space team-a (as app/config) wins, space team-b differs at " \
               "data.value" in found["message"]
    with world.hub.client() as c:
        listed = c.get("/placement/v1/conflicts").json()["items"]
    assert listed == [{"cluster": "florin", "group": "", "resource": "configmaps", "namespace": "shared",
                       "name": "config", "winner": "team-a", "loser": "team-b", "fields": ["data.value"]}]
    still = world.get("florin", cm_path("shared", "config"))
    assert still is not None and still["data"] == {"value": "from team-a"}
    assert still["metadata"]["uid"] == first["metadata"]["uid"]


def test_a_namespace_whose_mapped_name_is_too_long_is_reported_on_the_placement(world: World) -> None:
    world.apply("team-c", namespace(LONG), configmap("config", LONG, value="long"), configmaps_in("long", LONG))
    found = wait_for(lambda: condition(world, "team-c", "long", "NamespaceMappingFailed"), timeout=30,
                     message="the NamespaceMappingFailed condition")
    rendered = f"team-c-{LONG}"
    assert found["reason"] == "InvalidNamespaceName"
    assert f"namespace {LONG} maps to '{rendered}': must be no more than 63 characters" in found["message"]

    def told() -> str | None:
        out = world.hub.kubectl("describe", "edgeplacement", "long", space="team-c").stdout
        return out if "Warning  NamespaceMappingFailed" in out else None
    described = wait_for(told, timeout=30, message="the Warning Event in kubectl describe")
    assert rendered in described
    assert world.get("florin", f"/api/v1/namespaces/{rendered[:63]}") is None
    assert not [n for n in (world.get("florin", "/api/v1/namespaces") or {}).get("items", [])
                if n["metadata"]["name"].startswith("team-c-nnn")]

    # kubectl get -o json shows the one condition, however many objects the namespace holds.
    shown = json.loads(world.hub.kubectl("get", "edgeplacement", "long", "-o", "json", space="team-c").stdout)
    assert [c["type"] for c in shown["status"]["conditions"]].count("NamespaceMappingFailed") == 1


def test_a_namespace_follows_the_next_placement_when_its_deciding_one_stops_selecting_there(world: World) -> None:
    # a-first (first by name) selects only the marker in web and maps web explicitly; b-rest selects every
    # ConfigMap in web and sets no mapping, so while a-first selects something there web goes to first-web.
    world.apply("team-c", namespace("web"), configmap("marker", "web", value="m"),
                configmap("config", "web", value="c"),
                configmaps_in("a-first", "web", {"map": {"web": "first-web"}}, objectNames=["marker"]),
                configmaps_in("b-rest", "web"))
    world.wait_present("florin", cm_path("first-web", "config"), timeout=60)
    world.wait_present("florin", cm_path("first-web", "marker"))

    # The marker goes: a-first selects nothing in web, its mapping unchanged; the Space's default decides now.
    world.hub.kubectl("delete", "configmap", "marker", "-n", "web", space="team-c")
    moved = world.wait_present("florin", cm_path("team-c-web", "config"), timeout=60)
    assert moved["data"] == {"value": "c"}
    world.wait_absent("florin", cm_path("first-web", "config"), timeout=60)
