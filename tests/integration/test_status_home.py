"""Status comes home, end to end: the real hub, ``spacehub sim serve`` clusters and ``spacehub syncer run``.

KubeStellar's example1 (florin and guilder, both ``env=prod``) carries the stories: a Deployment on two
clusters whose aggregated status tells the truth to ``kubectl get`` and ``kubectl rollout status``, turns
not-ready when guilder cannot pull its image (the pod's reason in the PlacementStatus, the REST summary and
``kubectl describe``), StatusCollectors over the two clusters, and objects created in clusters upsynced.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import kubectl_yaml, wait_for
from tests.syncer_harness import World, configmap, deployment, namespace, placement

DEPLOY = "/apis/apps/v1/namespaces/commonstuff/deployments/commond"
PODS = "/api/v1/namespaces/commonstuff/pods"
CONTROL = "control.kubestellar.io/v1alpha1"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2).start()
    yield w
    w.close()


def join_example1(world: World) -> None:
    world.join("florin", "wec1", dict(env="prod"))
    world.join("guilder", "wec2", dict(env="prod", extended="yes"))
    world.hub.create_space("common")


def common_placement(**spec: Any) -> dict[str, Any]:
    doc = placement("edge-placement-c", {"env": "prod"},
                    [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["commonstuff"]}])
    doc["spec"].update(spec)
    return doc


def place_commond(world: World, **spec: Any) -> None:
    world.apply("common", namespace("commonstuff"), deployment("commond", "commonstuff", replicas=2),
                common_placement(**spec))


def space_deployment(world: World) -> dict[str, Any]:
    obj = world.hub_get("common", DEPLOY)
    assert obj is not None
    return obj


def placement_status(world: World) -> dict[str, Any] | None:
    return world.hub_get("common", "/apis/status.spacehub.io/v1alpha1/namespaces/commonstuff/placementstatuses/"
                                   "deployments.apps.commond")


def test_multi_cluster_status_tells_the_truth_and_a_failing_cluster_explains_itself(world: World) -> None:
    join_example1(world)
    place_commond(world, wantMultiWECReportedState=True)

    # Both clusters run two replicas: the space's Deployment shows the aggregate, and kubectl believes it.
    ready = wait_for(lambda: (d := space_deployment(world)).get("status", {}).get("readyReplicas") == 2 and d,
                     timeout=60, message="commond's aggregated readyReplicas")
    assert ready["status"]["availableReplicas"] == 2 and ready["status"]["updatedReplicas"] == 2
    assert ready["metadata"]["annotations"]["kubestellar.io/executing-count"] == "2"
    rollout = world.hub.kubectl("rollout", "status", "deployment/commond", "-n", "commonstuff", "--timeout=60s",
                                space="common")
    assert "successfully rolled out" in rollout.stdout
    table = world.hub.kubectl("get", "deploy", "commond", "-n", "commonstuff", space="common").stdout
    assert table.splitlines()[1].split()[1:4] == ["2/2", "2", "2"]

    # The fleet view: one PlacementStatus per placed object, kubectl's columns.
    wait_for(lambda: ((placement_status(world) or {}).get("summary") or {}).get("ready") == 2, timeout=30,
             message="the PlacementStatus counting two ready clusters")
    fleet = world.hub.kubectl("get", "placementstatuses", "-n", "commonstuff", space="common").stdout.splitlines()
    assert fleet[0].split() == ["NAME", "TARGETED", "APPLIED", "READY", "FAILED", "AGE"]
    assert fleet[1].split()[:5] == ["deployments.apps.commond", "2", "2", "2", "0"]

    # guilder cannot pull the new image: the space's Deployment stops being ready and says why.
    world.sim.set_faults("wec2", imagePullFailures=["*:broken"])
    world.hub.kubectl("set", "image", "deployment/commond", "web=library/httpd:broken", "-n", "commonstuff",
                      space="common")
    failing = wait_for(lambda: (s := placement_status(world)) and s["summary"]["ready"] == 1
                       and "ImagePullBackOff" in s["worstCondition"].get("message", "") and s,
                       timeout=60, message="guilder's pull failure in the PlacementStatus")
    assert failing["worstCondition"]["cluster"] == "guilder"
    assert "managedFields" not in failing["metadata"]  # only the hub writes it: nothing to track per entry
    guilder = next(c for c in failing["clusters"] if c["name"] == "guilder")
    assert guilder["associated"]["pods"]["waiting"]["reason"] in ("ErrImagePull", "ImagePullBackOff")
    assert guilder["associated"]["pods"]["waiting"]["pod"].startswith("commond-")
    florin = next(c for c in failing["clusters"] if c["name"] == "florin")
    assert florin["phase"] == "Ready"
    status = wait_for(lambda: (d := space_deployment(world))["status"].get("updatedReplicas", 0) < 2 and d,
                      timeout=30, message="commond's aggregated status no longer fully updated")
    assert status["status"]["updatedReplicas"] < 2
    not_done = world.hub.kubectl("rollout", "status", "deployment/commond", "-n", "commonstuff", "--timeout=2s",
                                 space="common", check=False)
    assert not_done.returncode != 0

    # The REST API's summary and kubectl describe tell the same story.
    view = world.placement_view("common", "commonstuff", "deployments.apps", "commond")
    assert view["summary"]["summary"]["ready"] == 1
    assert "ImagePullBackOff" in view["summary"]["worstCondition"]["message"]

    def described() -> str | None:
        out = world.hub.kubectl("describe", "deployment", "commond", "-n", "commonstuff", space="common").stdout
        warnings = [line for line in out.splitlines() if line.strip().startswith("Warning")
                    and "cluster guilder Pod/commond-" in line]
        return out if "Placed" in out and warnings else None
    story = wait_for(described, timeout=30, message="placement and guilder's Warning Events in kubectl describe")
    assert "placed on cluster florin" in story and "placed on cluster guilder" in story
    assert "ImagePullBackOff" in story
    events = kubectl_yaml(world.hub.kubectl("get", "events", "-n", "commonstuff", "-o", "yaml", space="common"))
    forwarded = [e for e in events["items"] if e["type"] == "Warning" and e["source"].get("host") == "guilder"]
    assert forwarded and all(e["involvedObject"]["name"] == "commond" for e in forwarded)

    # guilder can pull again: everything is ready, the summary says so.
    world.sim.clear_faults("wec2")
    world.hub.kubectl("set", "image", "deployment/commond", "web=library/httpd:2.4.1", "-n", "commonstuff",
                      space="common")
    wait_for(lambda: (s := placement_status(world)) and s["summary"]["ready"] == 2 and not s["worstCondition"],
             timeout=60, message="both clusters ready again")
    world.hub.kubectl("rollout", "status", "deployment/commond", "-n", "commonstuff", "--timeout=60s",
                      space="common")


def collector(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": CONTROL, "kind": "StatusCollector", "metadata": {"name": name}, "spec": spec}


def combined_results(world: World) -> dict[str, dict[str, Any]]:
    with world.hub.client() as c:
        r = c.get(f"/clusters/common/apis/{CONTROL}/namespaces/commonstuff/combinedstatuses")
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    return {res["name"]: res for item in items for res in item.get("results") or []}


def test_status_collectors_count_sum_and_group_the_clusters(world: World) -> None:
    join_example1(world)
    collectors = [
        collector("clusters", combinedFields=[{"name": "count", "type": "COUNT"}]),
        collector("available", combinedFields=[{"name": "sum", "type": "SUM",
                                                "subject": "returned.status.availableReplicas"}]),
        collector("by-extended", groupBy=[{"name": "extended",
                                           "def": "inventory.labels.exists(k, k == 'extended') ? "
                                                  "inventory.labels['extended'] : 'no'"}],
                  combinedFields=[{"name": "count", "type": "COUNT"}]),
    ]
    world.apply("common", *collectors)
    place_commond(world, downsync=[{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["commonstuff"],
                                    "statusCollectors": ["clusters", "available", "by-extended"]}])

    def summed(expected: float) -> dict[str, dict[str, Any]] | None:
        results = combined_results(world)
        rows = (results.get("available") or {}).get("rows") or []
        return results if rows and float(rows[0]["columns"][0]["float"]) == expected else None
    results = wait_for(lambda: summed(4), timeout=60, message="availableReplicas summed over both clusters")
    assert results["clusters"]["columnNames"] == ["count"]
    assert results["clusters"]["rows"] == [{"columns": [{"type": "Number", "float": "2"}]}]
    assert results["by-extended"]["columnNames"] == ["extended", "count"]
    groups = sorted(tuple(c.get("string", c.get("float")) for c in row["columns"])
                    for row in results["by-extended"]["rows"])
    assert groups == [("no", "1"), ("yes", "1")]

    # kubectl reads them, with KubeStellar's subject columns, named <object UID>.<placement UID>.
    table = world.hub.kubectl("get", "combinedstatuses", "-n", "commonstuff", space="common").stdout.splitlines()
    assert table[0].split()[:6] == ["NAME", "SUBJECT_GROUP", "SUBJECT_RSC", "SUBJECT_NS", "SUBJECT_NAME",
                                    "BINDINGPOLICY"]
    uid = space_deployment(world)["metadata"]["uid"]
    placement_uid = world.hub_get("common", "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/edge-placement-c")
    assert placement_uid is not None
    assert table[1].split()[:6] == [f"{uid}.{placement_uid['metadata']['uid']}", "apps", "deployments",
                                    "commonstuff", "commond", "edge-placement-c"]

    # guilder's pods can no longer be pulled: its available replicas fall away and the sum follows.
    world.sim.set_faults("wec2", imagePullFailures=["library/httpd:*"])
    world.sim.kubectl("wec2", "delete", "pods", "-n", "commonstuff", "-l", "app=commond", "--wait=false")
    wait_for(lambda: summed(2), timeout=60, message="the sum without guilder's replicas")

    # A collector whose CEL does not type-check is refused when written, with the CEL error at its field.
    bad = world.hub.kubectl("apply", "-f", "-", space="common", check=False, input=yaml.safe_dump(
        collector("bad", combinedFields=[{"name": "sum", "type": "SUM", "subject": "inventory.name + 1"}])))
    assert bad.returncode != 0
    assert "spec.combinedFields[0].subject" in bad.stderr and "no matching overload" in bad.stderr
    assert world.hub_get("common", f"/apis/{CONTROL}/statuscollectors/bad") is None


def upsync_placement(**spec: Any) -> dict[str, Any]:
    doc = placement("edge-placement-u", {"env": "prod"}, [])
    doc["spec"]["upsync"] = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["reports"],
                              "names": ["result-*"]}]
    doc["spec"].update(spec)
    return doc


def upsynced(world: World, name: str) -> dict[str, Any] | None:
    return world.hub_get("common", f"/api/v1/namespaces/reports/configmaps/{name}")


def test_upsync_from_one_cluster_follows_its_object_until_deleted(world: World) -> None:
    join_example1(world)
    world.apply("common", namespace("reports"), upsync_placement())
    for cluster in ("wec1", "wec2"):
        world.sim.kubectl(cluster, "create", "namespace", "reports")
    world.sim.kubectl("wec1", "create", "configmap", "result-a", "-n", "reports", "--from-literal=score=7")
    world.sim.kubectl("wec1", "create", "configmap", "other", "-n", "reports", "--from-literal=x=1")

    copy = wait_for(lambda: upsynced(world, "result-a"), timeout=60, message="result-a upsynced from florin")
    assert copy["data"] == {"score": "7"}
    assert copy["metadata"]["labels"]["spacehub.io/upsynced"] == "true"
    assert copy["metadata"]["annotations"]["spacehub.io/upsynced-from"] == "florin"
    listed = kubectl_yaml(world.hub.kubectl("get", "configmaps", "-n", "reports", "-l", "spacehub.io/upsynced=true",
                                            "-o", "yaml", space="common"))
    assert [i["metadata"]["name"] for i in listed["items"]] == ["result-a"]  # "other" is not named by the rule

    # A change in the cluster comes up; the space never sends the upsynced object back down.
    world.sim.kubectl("wec1", "patch", "configmap", "result-a", "-n", "reports", "-p", '{"data":{"score":"8"}}')
    wait_for(lambda: (upsynced(world, "result-a") or {}).get("data") == {"score": "8"}, timeout=30,
             message="result-a's change upsynced")
    assert world.get("guilder", "/api/v1/namespaces/reports/configmaps/result-a") is None

    # Deleted in the cluster: deleted in the space.
    world.sim.kubectl("wec1", "delete", "configmap", "result-a", "-n", "reports")
    wait_for(lambda: upsynced(world, "result-a") is None, timeout=30, message="result-a gone from the space")


def test_upsync_from_two_clusters_keeps_both_copies_and_names_the_clash(world: World) -> None:
    join_example1(world)
    world.apply("common", namespace("reports"), upsync_placement())
    for cluster, score in (("wec1", "1"), ("wec2", "2")):
        world.sim.kubectl(cluster, "create", "namespace", "reports")
        world.sim.kubectl(cluster, "create", "configmap", "result-x", "-n", "reports", f"--from-literal=score={score}")

    # The space shows florin's copy (the first cluster by name), the REST API both.
    shown = wait_for(lambda: upsynced(world, "result-x"), timeout=60, message="result-x upsynced")
    assert shown["data"] == {"score": "1"}
    assert shown["metadata"]["annotations"]["spacehub.io/upsynced-from"] == "florin"

    def both_copies() -> dict[str, Any] | None:
        with world.hub.client() as c:
            r = c.get("/placement/v1/spaces/common/upsynced")
        assert r.status_code == 200, r.text
        item = next((i for i in r.json()["items"] if i["name"] == "result-x"), None)
        return item if item and len(item["clusters"]) == 2 else None
    item = wait_for(both_copies, timeout=30, message="both clusters' copies in the REST API")
    assert item["shownFrom"] == "florin"
    assert {c["cluster"]: c["object"]["data"] for c in item["clusters"]} == {"florin": {"score": "1"},
                                                                          "guilder": {"score": "2"}}

    # The clash is named: an Event on the object and a condition on the placement.
    def clash_event() -> dict[str, Any] | None:
        events = kubectl_yaml(world.hub.kubectl("get", "events", "-n", "reports", "-o", "yaml", space="common"))
        return next((e for e in events["items"] if e["reason"] == "UpsyncClash"), None)
    event = wait_for(clash_event, timeout=30, message="the UpsyncClash Event")
    assert event["involvedObject"]["name"] == "result-x" and event["type"] == "Warning"
    assert "florin" in event["message"] and "guilder" in event["message"]
    conditions = wait_for(lambda: [c for c in (world.hub_get(
        "common", "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/edge-placement-u") or {}).get(
        "status", {}).get("conditions", []) if c["type"] == "UpsyncClash" and c["status"] == "True"],
        timeout=30, message="the UpsyncClash condition on the placement")
    assert "result-x" in conditions[0]["message"]

    # florin deletes its copy: guilder's is shown, the clash is over.
    world.sim.kubectl("wec1", "delete", "configmap", "result-x", "-n", "reports")
    wait_for(lambda: (upsynced(world, "result-x") or {}).get("data") == {"score": "2"}, timeout=30,
             message="guilder's copy shown")
    wait_for(lambda: not [c for c in (world.hub_get(
        "common", "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/edge-placement-u") or {}).get(
        "status", {}).get("conditions", []) if c["type"] == "UpsyncClash" and c["status"] == "True"],
        timeout=30, message="the UpsyncClash condition cleared")
    # guilder leaves the placement: its copy leaves with it, as if deleted in the cluster.
    world.hub.kubectl("label", "location", "guilder", "env=staging", "--overwrite", space="inventory")
    wait_for(lambda: upsynced(world, "result-x") is None, timeout=30, message="result-x gone from the space")
    assert world.get("guilder", "/api/v1/namespaces/reports/configmaps/result-x") is not None  # the cluster's own


def test_an_object_the_space_made_is_never_overwritten_by_upsync(world: World) -> None:
    join_example1(world)
    world.apply("common", namespace("reports"), configmap("result-own", "reports", owner="space"),
                upsync_placement())
    world.sim.kubectl("wec1", "create", "namespace", "reports")
    world.sim.kubectl("wec1", "create", "configmap", "result-own", "-n", "reports", "--from-literal=owner=cluster")

    def conflict_event() -> dict[str, Any] | None:
        events = kubectl_yaml(world.hub.kubectl("get", "events", "-n", "reports", "-o", "yaml", space="common"))
        return next((e for e in events["items"] if e["reason"] == "UpsyncConflict"), None)
    event = wait_for(conflict_event, timeout=60, message="the UpsyncConflict Event")
    assert "florin" in event["message"]
    assert (upsynced(world, "result-own") or {}).get("data") == {"owner": "space"}


def test_a_custom_resource_whose_crd_the_cluster_lacks_says_so(world: World) -> None:
    world.join("florin", "wec1", dict(env="prod"))
    world.hub.create_space("crds")
    world.hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space="crds")
    wait_for(lambda: world.hub.kubectl("get", "widgets", space="crds", check=False).returncode == 0, timeout=30,
             message="widgets served in the space")
    widget = {"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
              "metadata": {"name": "w0", "namespace": "default"},
              "spec": {"image": "r/w@sha256:" + "e" * 64, "owner": "team", "replicas": 1}}
    world.apply("crds", widget, placement("p", {"env": "prod"}, [
        {"apiGroup": "example.spacehub.io", "resources": ["widgets"], "namespaces": ["default"]}]))

    def crd_missing() -> dict[str, Any] | None:
        events = kubectl_yaml(world.hub.kubectl("get", "events", "-n", "default", "-o", "yaml", space="crds"))
        return next((e for e in events["items"] if e["reason"] == "CRDMissing"), None)
    event = wait_for(crd_missing, timeout=30, message="the CRDMissing Event")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "w0"
    assert "florin" in event["message"] and "widgets.v1.example.spacehub.io" in event["message"]

    # The cluster gets the CRD: the syncer's retry applies the widget.
    world.sim.kubectl("wec1", "apply", "-f", str(FIXTURES / "widgets.yaml"))
    world.wait_present("florin", "/apis/example.spacehub.io/v1/namespaces/default/widgets/w0", timeout=90)
