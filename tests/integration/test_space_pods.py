"""Pods in a space (README "Debug from the hub"): a Pod created in a space is stored, placed and run like any
workload object, and shown beside the clusters' pods.

Real processes throughout: the hub, ``spacehub sim serve`` with clusters wec1 and wec2, and a ``spacehub syncer
run`` per cluster. The space ``pods`` places the Pods labelled ``place=one`` on wec1 only, those labelled
``place=both`` (and a Deployment ``api``) on both. kubectl is real, and so is the Python ``kubernetes`` client.
Waits poll with deadlines; nothing sleeps.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from tests.harness import wait_for
from tests.integration.test_debug_from_hub import kubectl_bg as kubectl_in
from tests.integration.test_debug_from_hub import tunnel_connected
from tests.processes import Output
from tests.syncer_harness import World, deployment, namespace

pytestmark = pytest.mark.filterwarnings("ignore:Kubernetes version:UserWarning")
SPACE, NS = "pods", "run"
EDGE = "edge.kubestellar.io/v2alpha1"
CONTAINER = {"name": "nginx", "image": "nginx:1.25"}


def pod(name: str, place: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"place": place}},
            "spec": {"containers": [CONTAINER]}}


def pod_placement(name: str, clusters: dict[str, str], place: str) -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": clusters}],
                     "downsync": [{"apiGroup": "", "resources": ["pods"], "namespaces": [NS],
                                   "labelSelectors": [{"matchLabels": {"place": place}}]},
                                  {"apiGroup": "apps", "resources": ["deployments"], "namespaces": [NS]}]}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("space-pods"), clusters=2, sim_args=("--ready-delay", "0.2")).start()
    w.join("wec1", "wec1", {"env": "prod", "first": "yes"})
    w.join("wec2", "wec2", {"env": "prod"})
    w.hub.create_space(SPACE)
    w.apply(SPACE, namespace(NS), deployment("api", NS, replicas=1),
            pod_placement("one", {"first": "yes"}, "one"), pod_placement("both", {"env": "prod"}, "both"))
    wait_for(lambda: all(tunnel_connected(w, c) for c in ("wec1", "wec2")), timeout=30,
             message="both tunnels connected")
    yield w
    w.close()


def kubectl(world: World, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return world.hub.kubectl(*args, space=SPACE, check=check, input=input)


def kubectl_bg(world: World, *args: str) -> Output:
    return kubectl_in(world, *args, space=SPACE)


def get_json(world: World, *args: str) -> dict[str, Any]:
    return dict(orjson.loads(kubectl(world, "get", *args, "-n", NS, "-o", "json").stdout))


def phase(world: World, name: str) -> str:
    found = world.hub_get(SPACE, f"/api/v1/namespaces/{NS}/pods/{name}") or {}
    return str((found.get("status") or {}).get("phase") or "")


def core_api(world: World) -> k8s.CoreV1Api:
    cfg = k8s.Configuration()
    cfg.host = f"{world.hub.base_url}/clusters/{SPACE}"
    cfg.ssl_ca_cert = str(world.hub.ca_file)
    cfg.api_key = {"authorization": world.hub.token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return k8s.CoreV1Api(k8s.ApiClient(cfg))


def test_a_pod_created_with_kubectl_runs_on_its_cluster_and_shows_running(world: World) -> None:
    kubectl(world, "apply", "-f", "-", input=orjson.dumps(pod("solo", "one")).decode())
    running = world.wait_present("wec1", f"/api/v1/namespaces/{NS}/pods/solo", timeout=60)
    assert running["metadata"]["labels"]["place"] == "one"
    wait_for(lambda: phase(world, "solo") == "Running", timeout=60, message="solo Running in the space")
    shown = get_json(world, "pod", "solo")
    assert "spacehub.io/cluster" not in shown["metadata"]["labels"]  # the stored Pod, not a cluster's
    assert shown["status"]["containerStatuses"][0]["ready"] is True
    assert world.get("wec2", f"/api/v1/namespaces/{NS}/pods/solo") is None
    line = kubectl(world, "get", "pod", "solo", "-n", NS).stdout.splitlines()[1].split()
    assert line[:3] == ["solo", "1/1", "Running"], line


def test_a_pod_created_with_the_python_client_runs(world: World) -> None:
    api = core_api(world)
    body = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="py", labels={"place": "one"}),
                     spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="nginx", image="nginx:1.25")]))
    created = api.create_namespaced_pod(NS, body)
    assert created.status.phase == "Pending"
    wait_for(lambda: api.read_namespaced_pod("py", NS).status.phase == "Running", timeout=60,
             message="py Running, read by the Python client")
    api.delete_namespaced_pod("py", NS)
    world.wait_absent("wec1", f"/api/v1/namespaces/{NS}/pods/py", timeout=60)


def test_a_pod_on_two_clusters_shows_their_aggregate_and_its_copies_named_apart(world: World) -> None:
    kubectl(world, "apply", "-f", "-", input=orjson.dumps(pod("twin", "both")).decode())
    for cluster in ("wec1", "wec2"):
        world.wait_present(cluster, f"/api/v1/namespaces/{NS}/pods/twin", timeout=60)
    wait_for(lambda: phase(world, "twin") == "Running", timeout=60, message="twin Running in both clusters")
    status = get_json(world, "pod", "twin")["status"]
    # An aggregate: the fields both clusters agree on; their containers' statuses differ (container IDs).
    assert status["qosClass"] == "BestEffort" and "containerStatuses" not in status, status
    assert "containerStatuses" in get_json(world, "pod", "solo")["status"]  # one cluster: its status exactly

    listed = get_json(world, "pods")
    shown = {p["metadata"]["name"]: p["metadata"]["labels"].get("spacehub.io/cluster") for p in listed["items"]}
    assert shown["twin"] is None and shown["twin.wec1"] == "wec1" and shown["twin.wec2"] == "wec2", shown
    assert shown["solo"] is None and shown["solo.wec1"] == "wec1"
    api_pods = {n: c for n, c in shown.items() if n.startswith("api-")}
    assert sorted(api_pods.values()) == ["wec1", "wec2"], shown  # the Deployment's pods, one per cluster
    raw = world.hub_get(SPACE, f"/api/v1/namespaces/{NS}/pods") or {}
    assert int(raw["metadata"]["resourceVersion"]) > 0  # the store's: a watch resumes from it
    copy = get_json(world, "pod", "twin.wec2")
    assert copy["spec"]["nodeName"].startswith("wec2-node-")


def test_logs_of_a_stored_pod_reach_its_cluster(world: World) -> None:
    wait_for(lambda: phase(world, "solo") == "Running", timeout=60, message="solo Running")
    assert "node: wec1-node-" in kubectl(world, "logs", "solo", "-n", NS).stdout
    wait_for(lambda: phase(world, "twin") == "Running", timeout=60, message="twin Running")
    several = kubectl(world, "logs", "twin", "-n", NS, check=False)
    assert several.returncode == 1 and "name the copy to reach, one of twin.wec1, twin.wec2" in several.stderr
    assert "node: wec2-node-" in kubectl(world, "logs", "twin.wec2", "-n", NS).stdout
    assert kubectl(world, "exec", "solo", "-n", NS, "--", "cat", "/etc/spacehub-cluster").stdout.strip() == "wec1"


def test_a_clusters_pod_is_read_only_and_a_stored_pod_is_labelled(world: World) -> None:
    api_pod = next(p["metadata"]["name"] for p in get_json(world, "pods")["items"]
                   if p["metadata"]["name"].startswith("api-"))
    refused = kubectl(world, "label", "pod", api_pod, "-n", NS, "x=y", check=False)
    assert refused.returncode == 1 and "read-only here" in refused.stderr, refused.stderr
    kubectl(world, "label", "pod", "solo", "-n", NS, "team=blue")
    assert get_json(world, "pod", "solo")["metadata"]["labels"]["team"] == "blue"


def test_get_pods_watch_sees_a_stored_pod_go_from_pending_to_running(world: World) -> None:
    watched = kubectl_bg(world, "get", "pods", "-n", NS, "-l", "place=one", "-w")
    try:
        wait_for(lambda: "solo " in watched.text, timeout=20, message=f"the list first: {watched.errors}")
        kubectl(world, "apply", "-f", "-", input=orjson.dumps(pod("late", "one")).decode())
        wait_for(lambda: any(line.startswith("late ") and "Pending" in line for line in watched.text.splitlines()),
                 timeout=30, message=f"late Pending: {watched.text}")
        wait_for(lambda: any(line.startswith("late ") and "Running" in line for line in watched.text.splitlines()),
                 timeout=60, message=f"late Running: {watched.text} {watched.errors}")
    finally:
        watched.stop()



def test_get_pods_watch_sees_a_clusters_pod_appear(world: World) -> None:
    before = {p["metadata"]["name"] for p in get_json(world, "pods", "-l", "app=api")["items"]}
    assert len(before) == 2, before
    watched = kubectl_bg(world, "get", "pods", "-n", NS, "-l", "app=api", "-w", "--output-watch-events")
    try:
        wait_for(lambda: all(name in watched.text for name in before), timeout=20,
                 message=f"the list first: {watched.text} {watched.errors}")
        kubectl(world, "scale", "deployment", "api", "-n", NS, "--replicas=2")

        def added() -> set[str]:
            lines = (line.split() for line in watched.text.splitlines())
            return {fields[1] for fields in lines if fields[:1] == ["ADDED"] and fields[1] not in before}

        wait_for(lambda: len(added()) == 2, timeout=60, message=f"a new pod in each cluster: {watched.text}")
    finally:
        watched.stop()
        kubectl(world, "scale", "deployment", "api", "-n", NS, "--replicas=1")


def test_a_watch_resumes_from_a_lists_resource_version(world: World) -> None:
    api = core_api(world)
    listed = api.list_namespaced_pod(NS, label_selector="place=one")
    kubectl(world, "apply", "-f", "-", input=orjson.dumps(pod("resumed", "one")).decode())
    seen: list[tuple[str, str, str]] = []
    w = k8s_watch.Watch()
    for event in w.stream(api.list_namespaced_pod, NS, label_selector="place=one",
                          resource_version=listed.metadata.resource_version, timeout_seconds=20):
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, obj.metadata.resource_version))
        if obj.metadata.name == "resumed":
            w.stop()
    assert seen[0][:2] == ("ADDED", "resumed"), seen  # the stored Pod created after the list, nothing before it
    assert int(seen[0][2]) > int(listed.metadata.resource_version)
