"""Field ownership and drift reports end to end: the real hub, ``spacehub sim serve`` and a ``spacehub syncer run``.

Fields a cluster owns (``spacehub.io/retain-fields``) are left to the cluster after the first create; a drift mode
``ReportOnly`` (``spacehub.io/drift-mode``) reports changes without putting them back; every drift names its field
paths and the cluster-side field manager in the REST API's reported state, the PlacementStatus and an Event.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.syncer_harness import World, cm_path, configmap, deployment, namespace, placement

DEPLOY = "/apis/apps/v1/namespaces/app/deployments/{name}"
STATUS = "/apis/status.spacehub.io/v1alpha1/namespaces/app/placementstatuses/deployments.apps.{name}"
IMAGE = "spec.template.spec.containers[0].image"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=1).start()
    w.join("florin", "wec1", {"env": "prod"})
    w.hub.create_space("drift")
    yield w
    w.close()


def annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    obj["metadata"]["annotations"] = {f"spacehub.io/{key.replace('_', '-')}": value
                                      for key, value in annotations.items()}
    return obj


def place(world: World, *objects: dict[str, Any]) -> None:
    world.apply("drift", namespace("app"), *objects,
                placement("p", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                  "namespaces": ["app"]},
                                                 {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}],
                          singleton=True))


def reported(world: World, resource: str, name: str) -> dict[str, Any] | None:
    view = world.placement_view("drift", "app", resource, name)
    return view["reported"][0] if view["reported"] else None


def set_replicas_as_autoscaler(world: World, name: str, replicas: int) -> None:
    """What an in-cluster HPA does: write spec.replicas through the cluster's API under its own field manager."""
    world.sim.kubectl("wec1", "patch", "deployment", name, "-n", "app", "--type=merge", "--field-manager",
                      "horizontal-pod-autoscaler", "-p", f'{{"spec": {{"replicas": {replicas}}}}}')


def web_25() -> dict[str, Any]:
    web = deployment("web", "app", replicas=2)
    web["spec"]["template"]["spec"]["containers"][0]["image"] = "library/httpd:2.5"
    return web


def test_a_retained_field_stays_as_the_cluster_sets_it_and_is_not_drift(world: World) -> None:
    place(world, annotated(deployment("web", "app", replicas=2), retain_fields="spec.replicas"))
    path = DEPLOY.format(name="web")
    world.wait_present("florin", path, check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)

    set_replicas_as_autoscaler(world, "web", 5)
    # The space's aggregated status shows the cluster's 5, and nothing was put back.
    wait_for(lambda: ((world.hub_get("drift", path) or {}).get("status") or {}).get("readyReplicas") == 5,
             timeout=30, message="the cluster's 5 replicas in the space's status")
    # An edit in the space still rolls out, and leaves the cluster's replicas as they are.
    place(world, annotated(web_25(), retain_fields="spec.replicas"))
    live = world.wait_present("florin", path, check=lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"]
                              == "library/httpd:2.5")
    assert live["spec"]["replicas"] == 5
    report = wait_for(lambda: (r := reported(world, "deployments.apps", "web")) and r["appliedRevision"]
                      and (r.get("status") or {}).get("replicas") == 5 and r, timeout=30,
                      message="web's report after the edit")
    assert report["driftCorrections"] == 0 and report["drift"] == [], report
    assert report["retained"] == {"spec.replicas": 5}
    assert "drift:" not in world.syncers["florin"].log()

    # Without the annotation the same change is drift the syncer puts back, named with its path and manager.
    place(world, web_25())
    world.wait_present("florin", path, check=lambda d: d["spec"]["replicas"] == 2)
    set_replicas_as_autoscaler(world, "web", 6)
    world.wait_present("florin", path, check=lambda d: d["spec"]["replicas"] == 2)
    report = wait_for(lambda: (r := reported(world, "deployments.apps", "web")) and r["drift"] and r,
                      timeout=30, message="the drift reported")
    assert [(d["path"], d["manager"], d["corrected"]) for d in report["drift"]] == \
        [("spec.replicas", "horizontal-pod-autoscaler", True)]
    assert report["driftCorrections"] >= 1


def test_report_only_leaves_the_change_and_names_fields_and_manager(world: World) -> None:
    place(world, annotated(deployment("api", "app", replicas=1), drift_mode="ReportOnly"),
          annotated(configmap("cfg", "app", k="v"), drift_mode="ReportOnly"))
    path = DEPLOY.format(name="api")
    world.wait_present("florin", path, check=lambda d: (d.get("status") or {}).get("readyReplicas") == 1)
    world.wait_present("florin", cm_path("app", "cfg"))

    world.sim.kubectl("wec1", "set", "image", "deployment/api", "-n", "app", "web=library/httpd:9",
                      "--field-manager", "ops-edit")
    world.sim.kubectl("wec1", "patch", "configmap", "cfg", "-n", "app", "--field-manager", "ops-edit", "-p",
                      '{"data": {"k": "edited"}}')
    report = wait_for(lambda: (r := reported(world, "deployments.apps", "api")) and r["drift"] and r,
                      timeout=30, message="the image change reported")
    assert [(d["path"], d["manager"], d["corrected"]) for d in report["drift"]] == [(IMAGE, "ops-edit", False)]
    assert report["driftCorrections"] == 0
    cm_report = wait_for(lambda: (r := reported(world, "configmaps", "cfg")) and r["drift"] and r,
                         timeout=30, message="the ConfigMap change reported")
    assert [(d["path"], d["manager"]) for d in cm_report["drift"]] == [("data.k", "ops-edit")]

    # The PlacementStatus and an Event say the same; the cluster keeps its values.
    status = wait_for(lambda: (s := world.hub_get("drift", STATUS.format(name="api")))
                      and (s["clusters"][0].get("drift") or None) and s, timeout=30,
                      message="drift in the PlacementStatus")
    assert status["clusters"][0]["drift"][0]["path"] == IMAGE
    events = yaml.safe_load(world.hub.kubectl("get", "events", "-n", "app", "-o", "yaml", space="drift").stdout)
    messages = [e["message"] for e in events["items"] if e["reason"] == "Drift"]
    assert any(IMAGE in m and "ops-edit" in m and "florin" in m for m in messages), messages
    live = world.get("florin", path)
    assert live is not None and live["spec"]["template"]["spec"]["containers"][0]["image"] == "library/httpd:9"
    assert (world.get("florin", cm_path("app", "cfg")) or {})["data"] == {"k": "edited"}

    # A restarted syncer remembers what it reported and takes the cluster's values as they are: nothing new.
    syncer = world.syncers["florin"]
    syncer.stop()
    syncer.start()
    wait_for(lambda: "in sync at seq" in syncer.log().rsplit("--- start", 1)[-1], timeout=30,
             message="the restarted syncer in sync")
    world.sim.kubectl("wec1", "annotate", "configmap", "cfg", "-n", "app", "--field-manager", "ops-edit", "seen=yes")
    wait_for(lambda: (world.get("florin", cm_path("app", "cfg")) or {})["metadata"]["annotations"].get("seen"),
             timeout=30, message="the annotation")
    after = reported(world, "configmaps", "cfg") or {}
    assert after["drift"] == cm_report["drift"] and after["driftCorrections"] == 0, after
    assert (world.get("florin", cm_path("app", "cfg")) or {})["data"] == {"k": "edited"}


def test_a_retain_fields_annotation_that_does_not_parse_is_an_apply_error(world: World) -> None:
    place(world, annotated(configmap("bad", "app", k="v"), retain_fields="data..k"))
    report = wait_for(lambda: (r := reported(world, "configmaps", "bad")) and r["error"] and r, timeout=30,
                      message="the error reported")
    assert report["error"].startswith("InvalidPolicy: metadata.annotations[spacehub.io/retain-fields]"), report
    assert world.get("florin", cm_path("app", "bad")) is None


def test_downsync_tests_give_field_ownership_and_drift_mode(world: World) -> None:
    def tests(retain: list[str]) -> list[dict[str, Any]]:
        return [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"], "retainFields": retain},
                {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"], "driftMode": "ReportOnly"}]

    world.apply("drift", namespace("app"), deployment("web", "app", replicas=2), configmap("cfg", "app", k="v"),
                placement("p", {"env": "prod"}, tests(["spec.replicas"]), singleton=True))
    path = DEPLOY.format(name="web")
    world.wait_present("florin", path, check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)
    world.wait_present("florin", cm_path("app", "cfg"))

    set_replicas_as_autoscaler(world, "web", 5)
    world.sim.kubectl("wec1", "patch", "configmap", "cfg", "-n", "app", "--field-manager", "ops-edit", "-p",
                      '{"data": {"k": "edited"}}')
    wait_for(lambda: ((world.hub_get("drift", path) or {}).get("status") or {}).get("readyReplicas") == 5,
             timeout=30, message="the cluster's 5 replicas in the space's status")
    cm_report = wait_for(lambda: (r := reported(world, "configmaps", "cfg")) and r["drift"] and r,
                         timeout=30, message="the ConfigMap change reported")
    assert [(d["path"], d["manager"], d["corrected"]) for d in cm_report["drift"]] == [("data.k", "ops-edit", False)]
    assert (reported(world, "deployments.apps", "web") or {}).get("driftCorrections") == 0
    assert (world.get("florin", cm_path("app", "cfg")) or {})["data"] == {"k": "edited"}

    # Ownership given back to the space: the clusters get the copy again and the space's value returns.
    world.apply("drift", placement("p", {"env": "prod"}, tests([]), singleton=True))
    world.wait_present("florin", path, check=lambda d: d["spec"]["replicas"] == 2)

    # A path that does not parse is refused with its field path, and the placement stays as it was.
    bad = world.hub.kubectl("apply", "-f", "-", space="drift", check=False, input=yaml.safe_dump(
        placement("p", {"env": "prod"}, tests(["spec..replicas"]))))
    assert bad.returncode != 0 and "spec.downsync[0].retainFields[0]" in bad.stderr, bad.stderr
    stored = world.hub_get("drift", "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/p") or {}
    assert stored["spec"]["downsync"][0]["retainFields"] == []


def hpa(name: str, target: str) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "app"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": 10}}


def test_an_hpa_in_the_cluster_or_placed_owns_the_replicas_unless_opted_out(world: World) -> None:
    opted_out = annotated(deployment("pinned", "app", replicas=2), hpa_owns_replicas="false")
    world.apply("drift", namespace("app"), deployment("web", "app", replicas=2), deployment("api", "app", replicas=2),
                opted_out, hpa("api", "api"),
                placement("p", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                  "namespaces": ["app"]},
                                                 {"apiGroup": "autoscaling", "resources": ["horizontalpodautoscalers"],
                                                  "namespaces": ["app"]}], singleton=True))
    for name in ("web", "api", "pinned"):
        world.wait_present("florin", DEPLOY.format(name=name),
                           check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)
    world.wait_present("florin", "/apis/autoscaling/v2/namespaces/app/horizontalpodautoscalers/api")
    # web gets its HPA in the cluster itself; pinned has one too but keeps the space's replicas.
    world.sim.kubectl("wec1", "apply", "-f", "-", input=yaml.safe_dump_all([hpa("web", "web"),
                                                                            hpa("pinned", "pinned")]))
    log = world.syncers["florin"].log
    for name in ("web", "api", "pinned"):
        wait_for(lambda n=name: f"deployments/{n} in namespace app is scaled by" in log(), timeout=30,
                 message=f"the syncer hearing of {name}'s HPA")

    for name in ("web", "api", "pinned"):
        set_replicas_as_autoscaler(world, name, 5)
    for name in ("web", "api"):
        wait_for(lambda n=name: ((world.hub_get("drift", DEPLOY.format(name=n)) or {}).get("status") or {})
                 .get("readyReplicas") == 5, timeout=30, message=f"{name}'s 5 replicas in the space's status")
    world.wait_present("florin", DEPLOY.format(name="pinned"), check=lambda d: d["spec"]["replicas"] == 2)
    for name in ("web", "api"):
        report = reported(world, "deployments.apps", name) or {}
        assert report.get("driftCorrections") == 0 and report["retained"] == {"spec.replicas": 5}, report
        assert (world.get("florin", DEPLOY.format(name=name)) or {})["spec"]["replicas"] == 5
    pinned = wait_for(lambda: (r := reported(world, "deployments.apps", "pinned")) and r["drift"] and r,
                      timeout=30, message="pinned's drift reported")
    assert pinned["drift"][0]["path"] == "spec.replicas" and pinned["drift"][0]["corrected"]

    # An image edit in the space still rolls out, under the HPA's replicas.
    world.apply("drift", web_25())
    world.wait_present("florin", DEPLOY.format(name="web"),
                       check=lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] == "library/httpd:2.5"
                       and (d.get("status") or {}).get("updatedReplicas") == 5)
    assert (world.get("florin", DEPLOY.format(name="web")) or {})["spec"]["replicas"] == 5

    # Without its HPA, web's replicas are the space's again.
    world.sim.kubectl("wec1", "delete", "hpa", "web", "-n", "app")
    world.wait_present("florin", DEPLOY.format(name="web"), check=lambda d: d["spec"]["replicas"] == 2)


def test_the_simulated_hpa_scales_a_placed_deployment_from_the_cluster_load(world: World) -> None:
    """The simulator's HPA controller, driven by wec1's cpuLoad, scales a placed Deployment: its replicas are the
    HPA's (no drift correction), the space's status follows, and an image edit in the space still rolls out."""
    autoscaler = hpa("web", "web")
    autoscaler["spec"]["metrics"] = [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    place(world, deployment("web", "app", replicas=2))
    world.wait_present("florin", DEPLOY.format(name="web"),
                       check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)
    world.sim.kubectl("wec1", "apply", "-f", "-", input=yaml.safe_dump(autoscaler))
    wait_for(lambda: "deployments/web in namespace app is scaled by" in world.syncers["florin"].log(), timeout=30,
             message="the syncer hearing of web's HPA")
    world.sim.set_faults("wec1", cpuLoad=250)  # two and a half pods' worth at a 50% target: 5 replicas

    wait_for(lambda: ((world.hub_get("drift", DEPLOY.format(name="web")) or {}).get("status") or {})
             .get("readyReplicas") == 5, timeout=30, message="web's 5 replicas in the space's status")
    report = reported(world, "deployments.apps", "web") or {}
    assert report.get("driftCorrections") == 0 and report["retained"] == {"spec.replicas": 5}, report
    managers = {f["manager"] for f in world.sim.get("wec1", "deployment", "web", "-n", "app",
                                                    "--show-managed-fields")["metadata"]["managedFields"]}
    assert "horizontal-pod-autoscaler" in managers, managers
    assert world.hub_get("drift", DEPLOY.format(name="web"))["spec"]["replicas"] == 2  # the space's own spec

    world.apply("drift", web_25())
    world.wait_present("florin", DEPLOY.format(name="web"),
                       check=lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] == "library/httpd:2.5"
                       and (d.get("status") or {}).get("updatedReplicas") == 5)
    assert (reported(world, "deployments.apps", "web") or {}).get("driftCorrections") == 0
