"""Syncers end to end: the real hub, ``spacehub sim serve`` clusters and ``spacehub syncer run`` processes.

Every test builds its own world (hub, simulated clusters, syncers), so restarts and kills stay local.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import free_port, wait_for
from tests.syncer_harness import (
    COUNT,
    World,
    cm_path,
    configmap,
    deployment,
    namespace,
    placement,
    replicaset,
    status_post,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments/{name}"
RS = "/apis/apps/v1/namespaces/{ns}/replicasets/{name}"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2).start()
    yield w
    w.close()


def example1(world: World) -> None:
    """KubeStellar's example1, shrunk: florin and guilder; a common space placed on both, a special one
    placed on guilder only."""
    world.join("florin", "wec1", dict(env="prod"))
    world.join("guilder", "wec2", dict(env="prod", extended="yes"))
    for space in ("common", "special"):
        world.hub.create_space(space)
    world.apply("common", namespace("commonstuff"), configmap("httpd-htdocs", "commonstuff", index="hello"),
                replicaset("commond", "commonstuff", replicas=1),
                placement("edge-placement-c", {"env": "prod"},
                          [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"]},
                           {"apiGroup": "apps", "resources": ["replicasets"], "namespaces": ["commonstuff"]}],
                          singleton=True))
    world.apply("special", namespace("specialstuff"), deployment("speciald", "specialstuff", replicas=2),
                placement("edge-placement-s", {"extended": "yes"},
                          [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["specialstuff"]}],
                          singleton=True))


def test_example1_objects_reach_the_right_clusters_and_singleton_status_comes_back(world: World) -> None:
    example1(world)
    for cluster in ("florin", "guilder"):
        cm = world.wait_present(cluster, cm_path("commonstuff", "httpd-htdocs"))
        assert cm["data"] == {"index": "hello"}
        assert cm["metadata"]["labels"]["spacehub.io/managed"] == "true"
        assert cm["metadata"]["annotations"]["spacehub.io/sync-target"] == cluster
        world.wait_present(cluster, RS.format(ns="commonstuff", name="commond"))
    world.wait_present("guilder", DEPLOY.format(ns="specialstuff", name="speciald"))
    assert world.get("florin", DEPLOY.format(ns="specialstuff", name="speciald")) is None
    assert world.get("florin", "/api/v1/namespaces/specialstuff") is None

    # The singleton Deployment's status is the cluster's; the two-destination ReplicaSet gets the count and the
    # clusters' aggregate (wantMultiWECReportedState is on unless a placement says false).
    deployed = wait_for(lambda: (d := world.hub_get("special", DEPLOY.format(ns="specialstuff", name="speciald")))
                        and (d.get("status") or {}).get("readyReplicas") == 2 and d, timeout=30,
                        message="speciald's readyReplicas in its workload space")
    assert deployed["metadata"]["annotations"][COUNT] == "1"
    wait_for(lambda: (r := world.hub_get("common", RS.format(ns="commonstuff", name="commond")))
             and (r["metadata"].get("annotations") or {}).get(COUNT) == "2"
             and (r.get("status") or {}).get("readyReplicas") == r["spec"]["replicas"], timeout=30,
             message="commond's executing-count and its clusters' aggregated readyReplicas")
    # Both clusters' reports are in the placement API.
    reported = wait_for(lambda: len((v := world.placement_view("common", "commonstuff", "replicasets.apps",
                                                                "commond"))["reported"]) == 2 and v, timeout=30,
                        message="two reports for commond")
    assert [r["cluster"] for r in reported["reported"]] == ["florin", "guilder"]
    assert all(r["error"] is None and r["status"]["replicas"] == 1 for r in reported["reported"])


def test_update_delete_relabel_and_placement_deletion_reach_exactly_the_right_clusters(world: World) -> None:
    example1(world)
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("commonstuff", "httpd-htdocs"))
    world.wait_present("guilder", DEPLOY.format(ns="specialstuff", name="speciald"))

    # Update in the space: both clusters get it.
    world.apply("common", configmap("httpd-htdocs", "commonstuff", index="changed"))
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("commonstuff", "httpd-htdocs"),
                           check=lambda o: o["data"] == {"index": "changed"})

    # A second object, then deleted in the space: gone from both, the rest stays.
    world.apply("common", configmap("extra", "commonstuff", a="1"))
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("commonstuff", "extra"))
    world.hub.kubectl("delete", "configmap", "extra", "-n", "commonstuff", space="common")
    for cluster in ("florin", "guilder"):
        world.wait_absent(cluster, cm_path("commonstuff", "extra"))
        assert world.get(cluster, cm_path("commonstuff", "httpd-htdocs")) is not None

    # guilder relabelled out of the special placement: it loses speciald (and the implicit namespace).
    world.hub.kubectl("label", "location", "guilder", "extended-", space="inventory")
    world.wait_absent("guilder", DEPLOY.format(ns="specialstuff", name="speciald"))
    assert world.get("guilder", cm_path("commonstuff", "httpd-htdocs")) is not None
    world.hub.kubectl("label", "location", "florin", "extended=yes", space="inventory")
    world.wait_present("florin", DEPLOY.format(ns="specialstuff", name="speciald"))

    # The common placement deleted: its objects leave both clusters, the special ones stay on florin.
    world.hub.kubectl("delete", "edgeplacement", "edge-placement-c", space="common")
    for cluster in ("florin", "guilder"):
        world.wait_absent(cluster, cm_path("commonstuff", "httpd-htdocs"))
        world.wait_absent(cluster, RS.format(ns="commonstuff", name="commond"))
        world.wait_absent(cluster, "/api/v1/namespaces/commonstuff")
    assert world.get("florin", DEPLOY.format(ns="specialstuff", name="speciald")) is not None


def test_unmarked_cluster_objects_are_never_deleted(world: World) -> None:
    """An object the cluster already had, with the same name as a placed one, stays when placement ends:
    the syncer adopts it while placed but deletes only what carries its marks at deletion time."""
    world.join("florin", "wec1", dict(env="prod"))
    world.sim.kubectl("wec1", "create", "namespace", "preexisting")
    world.hub.create_space("own")
    world.apply("own", namespace("preexisting"), configmap("mine", "preexisting", a="1"),
                placement("p", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                  "namespaces": ["preexisting"]}]))
    world.wait_present("florin", cm_path("preexisting", "mine"))
    ns = world.get("florin", "/api/v1/namespaces/preexisting")
    assert ns is not None and "spacehub.io/managed" not in (ns["metadata"].get("labels") or {})
    world.hub.kubectl("delete", "edgeplacement", "p", space="own")
    world.wait_absent("florin", cm_path("preexisting", "mine"))
    assert world.get("florin", "/api/v1/namespaces/preexisting") is not None  # implicit, and the cluster's own


def test_a_crd_and_its_custom_resources_arrive_in_a_fresh_cluster_in_one_go(world: World) -> None:
    world.hub.create_space("crds")
    world.hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space="crds")
    wait_for(lambda: world.hub.kubectl("get", "widgets", space="crds", check=False).returncode == 0, timeout=30,
             message="widgets served in the space")
    widgets = [{"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
                "metadata": {"name": f"w{i}", "namespace": "default"},
                "spec": {"image": "r/w@sha256:" + "e" * 64, "owner": "team", "replicas": i + 1}} for i in range(3)]
    world.apply("crds", *widgets, placement("p", {"env": "crd"}, [
        {"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"]},
        {"apiGroup": "example.spacehub.io", "resources": ["widgets"], "namespaces": ["default"]}]))
    syncer = world.join("fresh", "wec1", dict(env="crd"))
    for i in range(3):
        widget = world.wait_present("fresh", f"/apis/example.spacehub.io/v1/namespaces/default/widgets/w{i}")
        assert widget["spec"]["replicas"] == i + 1
    crd = world.get("fresh", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.spacehub.io")
    assert crd is not None
    # In one go: nothing failed and was retried.
    assert "cannot apply" not in syncer.log(), syncer.log()[-3000:]
    view = wait_for(lambda: (v := world.placement_view("crds", "default", "widgets.example.spacehub.io", "w0"))
                    ["reported"] and v, timeout=30, message="w0 reported")
    assert view["reported"][0]["error"] is None


def test_drift_in_the_cluster_is_reverted_and_reported(world: World) -> None:
    world.join("florin", "wec1", dict(env="prod"))
    world.hub.create_space("drift")
    world.apply("drift", namespace("app"), deployment("web", "app", replicas=2), configmap("cfg", "app", k="v"),
                placement("p", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                  "namespaces": ["app"]},
                                                 {"apiGroup": "", "resources": ["configmaps"],
                                                  "namespaces": ["app"]}]))
    path = DEPLOY.format(ns="app", name="web")
    world.wait_present("florin", path, check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)

    world.sim.kubectl("wec1", "scale", "deployment", "web", "-n", "app", "--replicas=5")
    world.wait_present("florin", path, check=lambda d: d["spec"]["replicas"] == 2)
    view = wait_for(lambda: (v := world.placement_view("drift", "app", "deployments.apps", "web"))["reported"]
                    and v["reported"][0]["driftCorrections"] >= 1 and v, timeout=30,
                    message="the correction reported to the hub")
    assert view["reported"][0]["lastDriftCorrection"]

    # Deleting a managed object in the cluster is drift too; so is removing the syncer's marks.
    world.sim.kubectl("wec1", "delete", "configmap", "cfg", "-n", "app")
    world.wait_present("florin", cm_path("app", "cfg"), check=lambda o: o["data"] == {"k": "v"})
    world.sim.kubectl("wec1", "label", "configmap", "cfg", "-n", "app", "spacehub.io/managed-")
    world.wait_present("florin", cm_path("app", "cfg"),
                       check=lambda o: o["metadata"]["labels"].get("spacehub.io/managed") == "true")
    # A field the syncer does not set survives its corrections of the fields it does set.
    world.sim.kubectl("wec1", "annotate", "configmap", "cfg", "-n", "app", "team=ops")
    world.sim.kubectl("wec1", "patch", "configmap", "cfg", "-n", "app", "-p", '{"data": {"k": "edited"}}')
    fixed = world.wait_present("florin", cm_path("app", "cfg"), check=lambda o: o["data"] == {"k": "v"})
    assert fixed["metadata"]["annotations"]["team"] == "ops"
    assert world.syncers["florin"].log().count("drift:") >= 4


def test_cross_cluster_credentials_are_refused(world: World) -> None:
    world.register("florin", env="prod")
    world.register("guilder", env="prod")
    florin = world.token("florin")
    with httpx.Client(base_url=world.hub.base_url, verify=world.hub.ssl_context(), timeout=30) as c:
        r = c.get("/syncer/v1/targets/guilder/stream", headers={"Authorization": f"Bearer {florin}"})
        assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
        r = c.get("/clusters/inventory/synctargets/guilder/api/v1/configmaps",
                  headers={"Authorization": f"Bearer {florin}"})
        assert r.status_code == 403
    r = status_post(world, florin, "guilder", {"objects": []})
    assert r.status_code == 403 and r.json()["kind"] == "Status"
    assert status_post(world, florin, "florin", {"objects": []}).status_code == 200


def test_apply_errors_are_reported_and_retried_until_the_cluster_accepts(world: World) -> None:
    world.join("florin", "wec1", dict(env="prod"))
    world.hub.create_space("errors")
    world.apply("errors", namespace("app"), configmap("first", "app", v="1"),
                placement("p", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                  "namespaces": ["app"]}]))
    world.wait_present("florin", cm_path("app", "first"))
    world.sim.set_faults("wec1", failWrites=True)
    world.apply("errors", configmap("blocked", "app", v="1"))
    view = wait_for(lambda: (v := world.placement_view("errors", "app", "configmaps", "blocked"))["reported"]
                    and v["reported"][0]["error"] and v, timeout=30, message="the apply error reported")
    assert "InternalError" in view["reported"][0]["error"]
    world.sim.clear_faults("wec1")
    world.wait_present("florin", cm_path("app", "blocked"), timeout=60)
    wait_for(lambda: world.placement_view("errors", "app", "configmaps", "blocked")["reported"][0]["error"] is None,
             timeout=30, message="the error cleared after the retry")


def test_the_syncer_serves_its_metrics_and_health_and_logs_json(world: World) -> None:
    port = free_port()
    world.join("florin", "wec1", dict(env="prod"),
               extra_args=["--metrics-listen", f"127.0.0.1:{port}", "--log-format", "json"])
    world.hub.create_space("observed")
    world.apply("observed", namespace("app"), configmap("cfg", "app", k="v"),
                placement("p", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                  "namespaces": ["app"]}]))
    world.wait_present("florin", cm_path("app", "cfg"))
    base = f"http://127.0.0.1:{port}"

    def scraped() -> dict[str, float] | None:
        text = httpx.get(f"{base}/metrics", timeout=5).text
        found = {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
                 if s.labels.get("target") == "florin"}
        return found if found.get("spacehub_syncer_objects", 0) >= 2 else None  # the namespace and the ConfigMap

    found = wait_for(scraped, timeout=30, message="the syncer's metrics")
    assert found["spacehub_syncer_connected"] == 1
    assert found["spacehub_syncer_applies_total"] >= 2 and found["spacehub_syncer_seq"] > 0
    assert found["spacehub_syncer_apply_errors_total"] == 0 and found["spacehub_syncer_objects_failing"] == 0
    assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
    assert httpx.get(f"{base}/readyz", timeout=5).status_code == 200
    logged = [orjson.loads(line) for line in world.syncers["florin"].log().splitlines()
              if line.strip() and not line.startswith("--- start")]  # the harness's own line
    assert logged and all({"time", "level", "logger", "msg"} <= entry.keys() for entry in logged)
