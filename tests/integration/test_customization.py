"""Per-cluster copies, end to end: KubeStellar example1's Customizer and parameter expansion through the real hub,
``spacehub syncer run`` processes and ``spacehub sim serve`` clusters, driven with kubectl.

florin and guilder (``env=prod``; guilder also ``extended=yes``) each get their own copy: the web site's
ConfigMap names the Location it runs in, commond's environment variable comes from a Customizer. A relabelled
Location or an edited Customizer changes the copies; a Customizer that cannot apply is reported and the
clusters keep what they had.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.example1 import COMMOND, EDGE, common_placement, commond, customizer, env_value, example1_world, site, text
from tests.harness import wait_for
from tests.syncer_harness import World, cm_path, namespace

DEPLOY = COMMOND
SITE = cm_path("commonstuff", "httpd-htdocs")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with example1_world(tmp_path, "common") as w:
        yield w


def conditions(world: World) -> dict[str, dict[str, Any]]:
    obj = world.hub_get("common", f"/apis/{EDGE}/edgeplacements/edge-placement-c") or {}
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def test_each_cluster_gets_its_own_copy_and_follows_its_location_and_the_customizer(world: World) -> None:
    world.apply("common", namespace("commonstuff"), customizer(), site(), commond(), common_placement())

    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, SITE, check=lambda o, c=cluster: text(o) == f"This is a common web site. "
                                                                                f"Running in {c}, 100% customized.")
        world.wait_present(cluster, DEPLOY, check=lambda o: env_value(o) == "env is prod")
    # The space keeps what was written; only the copies are customized.
    space_site = world.hub_get("common", SITE)
    assert space_site is not None and "%(loc-name)" in text(space_site)

    # kubectl against a cluster's desired set shows exactly its copy.
    shown = world.hub.kubectl("--server", f"{world.hub.base_url}/clusters/inventory/synctargets/guilder", "get",
                              "configmap", "httpd-htdocs", "-n", "commonstuff", "-o", "yaml").stdout
    assert "Running in guilder," in text(yaml.safe_load(shown))

    # Relabelling florin's Location changes florin's copy only.
    world.hub.kubectl("label", "locations", "florin", "loc-name=florin-east", "--overwrite", space="inventory")
    world.wait_present("florin", SITE, check=lambda o: "Running in florin-east," in text(o))
    guilder_site = world.get("guilder", SITE)
    assert guilder_site is not None and "Running in guilder," in text(guilder_site)

    # Editing the Customizer changes every copy of the objects that name it.
    world.apply("common", customizer(value='"env is %(env), extended: %(extended)"'))
    world.wait_present("guilder", DEPLOY, check=lambda o: env_value(o) == "env is prod, extended: yes")
    world.wait_present("florin", DEPLOY, check=lambda o: env_value(o) == "env is prod, extended: %(extended)")

    # florin has no `extended` parameter: left as written, and told as a Warning Event on the object.
    def warned() -> str | None:
        out = world.hub.kubectl("get", "events", "-n", "commonstuff", "--field-selector",
                                "involvedObject.name=commond,reason=UnknownParameter", "-o", "yaml",
                                space="common").stdout
        items = yaml.safe_load(out)["items"]
        return items[0]["message"] if items else None
    assert "cluster florin defines no extended" in wait_for(warned, timeout=30, message="UnknownParameter Event")
    assert "CustomizationFailed" not in conditions(world)


def test_a_customizer_that_cannot_apply_is_reported_and_clusters_keep_their_copy(world: World) -> None:
    world.apply("common", namespace("commonstuff"), customizer(), commond(), common_placement())
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, DEPLOY, check=lambda o: env_value(o) == "env is prod")

    # A path that does not parse: the placement says so, the object's story too, the clusters keep their copy.
    world.apply("common", customizer(path="$.spec.template.spec.containers[", value='"broken"'))
    failed = wait_for(lambda: conditions(world).get("CustomizationFailed"), timeout=30,
                      message="CustomizationFailed on the EdgePlacement")
    assert failed["status"] == "True"
    assert "deployments.apps commonstuff/commond for florin, guilder" in failed["message"]
    assert "is not a valid JSONPath" in failed["message"]
    describe = wait_for(lambda: (out := world.hub.kubectl("describe", "deployment", "commond", "-n", "commonstuff",
                                                          space="common").stdout) and "CustomizationFailed" in out
                        and out, timeout=30, message="CustomizationFailed in kubectl describe")
    assert "keeps its previous copy" in describe
    def summarised() -> list[dict[str, Any]]:
        view = world.placement_view("common", "commonstuff", "deployments.apps", "commond")
        clusters = (view.get("summary") or {}).get("clusters") or []
        return [c for c in clusters if "customization failed" in (c.get("message") or "")]
    assert {c["name"] for c in wait_for(summarised, timeout=30, message="the failure in the object's summary")} \
        == {"florin", "guilder"}
    with world.hub.client() as c:
        desired = c.get("/placement/v1/clusters/florin/desired").json()["items"]
    entry = next(e for e in desired if e["name"] == "commond")
    assert "is not a valid JSONPath" in entry["copyError"]

    # More changes to the object still do not reach the clusters while its copies cannot be made.
    scaled = commond()
    scaled["spec"]["replicas"] = 2
    world.apply("common", scaled)
    world.syncers["florin"].stop()  # a full resync must not delete what the cluster keeps
    world.syncers["florin"].start()
    wait_for(lambda: "keeping the cluster's copy" in world.syncers["florin"].log(), timeout=30,
             message="florin's syncer holding its copy after the resync")
    for cluster in ("florin", "guilder"):
        kept = world.get(cluster, DEPLOY)
        assert kept is not None and env_value(kept) == "env is prod" and kept["spec"]["replicas"] == 1

    # Fixed: the copies follow, and the condition goes.
    world.apply("common", customizer(value='"env is %(env) again"'))
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, DEPLOY, check=lambda o: env_value(o) == "env is prod again"
                           and o["spec"]["replicas"] == 2)
    wait_for(lambda: "CustomizationFailed" not in conditions(world), timeout=30, message="the condition cleared")


def test_an_object_naming_a_missing_customizer_reaches_no_cluster_until_it_exists(world: World) -> None:
    world.apply("common", namespace("commonstuff"), commond(), common_placement())
    failed = wait_for(lambda: conditions(world).get("CustomizationFailed"), timeout=30,
                      message="CustomizationFailed for the missing Customizer")
    assert "Customizer commonstuff/example-customizer does not exist" in failed["message"]
    assert world.get("florin", DEPLOY) is None and world.get("guilder", DEPLOY) is None
    world.apply("common", customizer())
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, DEPLOY, check=lambda o: env_value(o) == "env is prod")
    wait_for(lambda: "CustomizationFailed" not in conditions(world), timeout=30, message="the condition cleared")
