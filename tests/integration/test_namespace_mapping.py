"""Namespace mapping (README "Inventory and placement"), end to end: two spaces place ``namespace app`` on one
cluster and both run there, each in the namespace its mapping names; a bad mapping is refused with its field path.

Real processes: the hub, ``spacehub sim serve`` and a ``spacehub syncer run`` for cluster florin; kubectl is real.
team-a maps through its Space's default (``spec.namespaceMapping.template``), team-b through its EdgePlacement's
explicit map. Both place a ConfigMap of one name with different content, which without mapping is a conflict
(tests/integration/test_space_conflicts.py), and a Deployment whose status and pods each space sees as its own.
The tests share one world and run in order: upsync from a mapped namespace, refused mappings, a deletion and a
changed mapping, then a hub restart.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.syncer_harness import EDGE, World, cm_path, configmap, deployment, namespace, placement

SPACE_API = "spacehub.io/v1alpha1"
WHERE = {"team-a": "team-a-app", "team-b": "b-app"}  # the cluster namespace of each space's app


def space(name: str, mapping: dict[str, Any] | None) -> dict[str, Any]:
    return {"apiVersion": SPACE_API, "kind": "Space", "metadata": {"name": name},
            "spec": {} if mapping is None else {"namespaceMapping": mapping}}


def app_placement(mapping: dict[str, Any] | None = None, name: str = "app") -> dict[str, Any]:
    obj = placement(name, {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]},
                                            {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}])
    if mapping is not None:
        obj["spec"]["namespaceMapping"] = mapping
    return obj


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("nsmap"), clusters=1, sim_args=("--ready-delay", "0.2")).start()
    w.join("florin", "wec1", {"env": "prod"})
    for name in ("team-a", "team-b"):
        w.hub.create_space(name)
    w.apply("root", space("team-a", {"template": "{{space}}-{{namespace}}"}))
    for name, mapping in (("team-a", None), ("team-b", {"map": {"app": "b-app"}})):
        w.apply(name, namespace("app"), configmap("config", "app", value=f"from {name}"),
                deployment("web", "app", replicas=1), app_placement(mapping))
    yield w
    w.close()


def pods(world: World, name: str) -> list[dict[str, Any]]:
    listed = yaml.safe_load(world.hub.kubectl("get", "pods", "-n", "app", "-o", "yaml", space=name).stdout)
    return list(listed["items"])


def test_two_spaces_place_namespace_app_on_one_cluster_and_each_sees_its_own(world: World) -> None:
    for name, where in WHERE.items():
        cm = world.wait_present("florin", cm_path(where, "config"), timeout=60)
        assert cm["data"] == {"value": f"from {name}"}
        assert world.get("florin", f"/api/v1/namespaces/{where}") is not None
    assert world.get("florin", cm_path("app", "config")) is None  # neither space's app is written as it is

    for name, where in WHERE.items():
        cluster_pods = lambda w=where: (world.get("florin", f"/api/v1/namespaces/{w}/pods") or {}).get("items")  # noqa: E731
        running = wait_for(lambda c=cluster_pods: [p for p in c() or [] if p["status"].get("phase") == "Running"],
                           timeout=60, message=f"web's pod running in {where}")
        # The Deployment's status in the space is its own cluster copy's.
        wait_for(lambda n=name: ((world.hub_get(n, "/apis/apps/v1/namespaces/app/deployments/web") or {})
                                 .get("status") or {}).get("readyReplicas") == 1,
                 timeout=60, message=f"web Ready in {name}")
        # kubectl get pods in the space: its pods, in its own namespace app, and no other space's.
        shown = wait_for(lambda n=name: pods(world, n), timeout=30, message=f"pods shown in {name}")
        assert {p["metadata"]["uid"] for p in shown} == {p["metadata"]["uid"] for p in running}
        assert {p["metadata"]["namespace"] for p in shown} == {"app"}
        one = shown[0]["metadata"]["name"]
        got = json.loads(world.hub.kubectl("get", "pod", one, "-n", "app", "-o", "json", space=name).stdout)
        assert got["metadata"]["uid"] == shown[0]["metadata"]["uid"]

    with world.hub.client() as c:
        assert c.get("/placement/v1/conflicts").json()["items"] == []
    for name in WHERE:
        status = world.hub_get(name, f"/apis/{EDGE}/edgeplacements/app") or {}
        assert not [c for c in (status.get("status") or {}).get("conditions") or [] if c["type"] == "Conflict"]


def test_upsync_reads_the_mapped_namespace_into_the_space_s_own(world: World) -> None:
    upsyncing = app_placement()
    upsyncing["spec"]["upsync"] = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"],
                                    "names": ["result-*"]}]
    world.apply("team-a", upsyncing)
    world.sim.kubectl("wec1", "create", "configmap", "result-a", "-n", "team-a-app", "--from-literal=score=7")
    copy = wait_for(lambda: world.hub_get("team-a", "/api/v1/namespaces/app/configmaps/result-a"), timeout=60,
                    message="result-a upsynced into team-a's app")
    assert copy["data"] == {"score": "7"}
    assert copy["metadata"]["annotations"]["spacehub.io/upsynced-from"] == "florin"
    assert world.hub_get("team-b", "/api/v1/namespaces/app/configmaps/result-a") is None


def refused(world: World, where: str, doc: dict[str, Any]) -> str:
    proc = world.hub.kubectl("apply", "-f", "-", space=where, input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


@pytest.mark.parametrize(("mapping", "path", "why"), [
    ({"template": "{{space}}-app"}, "spec.namespaceMapping.template", "must contain {{namespace}}"),
    ({"template": "Team_{{namespace}}"}, "spec.namespaceMapping.template", "RFC 1123 label"),
    ({"template": "x" * 62 + "-{{namespace}}"}, "spec.namespaceMapping.template", "no more than 63 characters"),
    ({"map": {"app": "one", "web": "one"}}, "spec.namespaceMapping.map[web]", 'Duplicate value: "one"'),
])
def test_a_bad_mapping_is_refused_with_its_field_path_and_nothing_changes(
        world: World, mapping: dict[str, Any], path: str, why: str) -> None:
    before = world.hub_get("team-b", f"/apis/{EDGE}/edgeplacements/app")
    message = refused(world, "team-b", app_placement(mapping))
    assert f"{path}: " in message and why in message and "is invalid" in message, message
    assert world.hub_get("team-b", f"/apis/{EDGE}/edgeplacements/app") == before

    space_before = world.hub_get("root", "/apis/spacehub.io/v1alpha1/spaces/team-a")
    message = refused(world, "root", space("team-a", mapping))
    assert f"{path}: " in message and why in message, message
    assert world.hub_get("root", "/apis/spacehub.io/v1alpha1/spaces/team-a") == space_before


def test_kubectl_explain_describes_the_space_field(world: World) -> None:
    proc = world.hub.kubectl("explain", "spaces.spec.namespaceMapping", space="root", check=False)
    assert isinstance(proc, subprocess.CompletedProcess)
    assert proc.returncode == 0, proc.stderr
    assert "template" in proc.stdout and "map" in proc.stdout


def test_a_deleted_object_goes_from_its_mapped_namespace_and_a_changed_mapping_moves_the_space(world: World) -> None:
    world.hub.kubectl("delete", "configmap", "config", "-n", "app", space="team-b")
    world.wait_absent("florin", cm_path("b-app", "config"))
    assert world.get("florin", cm_path("team-a-app", "config")) is not None

    world.apply("root", space("team-a", {"template": "a-{{namespace}}"}))
    moved = world.wait_present("florin", cm_path("a-app", "config"), timeout=60)
    assert moved["data"] == {"value": "from team-a"}
    world.wait_absent("florin", cm_path("team-a-app", "config"))
    world.wait_absent("florin", "/api/v1/namespaces/team-a-app", timeout=60)
    wait_for(lambda: {p["metadata"]["namespace"] for p in pods(world, "team-a")} == {"app"}
             and (world.get("florin", "/api/v1/namespaces/a-app/pods") or {}).get("items"),
             timeout=60, message="team-a's pods shown from a-app")


def test_a_restarted_hub_keeps_the_mapping(world: World) -> None:
    world.hub.stop()
    world.hub.start()
    world.apply("team-a", configmap("later", "app", value="after the restart"))
    assert world.wait_present("florin", cm_path("a-app", "later"), timeout=60)["data"] == {"value": "after the restart"}
    assert world.get("florin", cm_path("a-app", "config")) is not None
    for name in ("later", "config"):
        assert world.get("florin", cm_path("app", name)) is None
