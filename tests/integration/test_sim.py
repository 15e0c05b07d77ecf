"""``spacehub sim serve``: simulated clusters driven with real kubectl and HTTP.

One simulator serves four clusters for the module from two processes (``--processes 2``): wec1 and wec2 on
``--listen``, wec3 and wec4 on the second process's port. wec1 runs workloads, wec2 has a custom node
shape and runs out of room, wec3 takes injected faults through the admin endpoint (forwarded to its
process) and wec4 starts with faults from ``--faults-file``. Tests that restart a simulator start their own.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness import BIN, free_port, wait_for
from tests.sim_harness import Sim

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_RULES = REPO / "sim" / "example-status-rules.yaml"
READY_DELAY = 0.2


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    base = tmp_path_factory.mktemp("sim")
    faults_file = base / "faults.yaml"
    faults_file.write_text(yaml.safe_dump({"wec4": {"latencySeconds": 0.3, "failWrites": True}}))
    s = Sim(data_dir=base / "data", port=free_port(), home=base / "home", clusters=4, extra_args=[
        "--ready-delay", str(READY_DELAY), "--status-rules", str(EXAMPLE_RULES), "--faults-file", str(faults_file),
        "--node-cpu", "8", "--node-memory", "32Gi", "--node-cpu", "wec2=2", "--nodes-per-cluster", "wec2=1",
        "--processes", "2"])
    s.start()
    yield s
    assert s.stopped_cleanly(s.stop()), s.log()[-3000:]


def _yaml(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj)


def deployment(name: str, replicas: int, image: str = "nginx:1.25") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": image}]}}}}


def pods_of(sim: Sim, cluster: str, selector: str) -> list[dict[str, Any]]:
    return list(sim.get(cluster, "pods", "-l", selector)["items"])


def running(pods: list[dict[str, Any]]) -> bool:
    return all(p.get("status", {}).get("phase") == "Running" for p in pods)


# --- startup ------------------------------------------------------------------------------------------------


def test_startup_table_and_kubeconfigs(sim: Sim) -> None:
    log = sim.log()
    assert "CLUSTER" in log and "KUBECONFIG" in log
    ca = sim.ca_file.read_bytes()
    tokens, servers = set(), {}
    for name in sim.names:
        path = sim.kubeconfig(name)
        assert str(path.resolve()) in log
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        cfg = yaml.safe_load(path.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        servers[name] = cluster["server"]
        assert cluster["server"] in log
        assert base64.b64decode(cluster["certificate-authority-data"]) == ca
        tokens.add(cfg["users"][0]["user"]["token"])
        assert cfg["current-context"] == name
    assert len(tokens) == len(sim.names)
    # Two processes: the first two clusters on --listen, the others on the second process's port.
    assert servers["wec1"] == f"{sim.base_url}/clusters/wec1" and servers["wec2"] == f"{sim.base_url}/clusters/wec2"
    second = servers["wec3"].removesuffix("/clusters/wec3")
    assert second != sim.base_url and servers["wec4"] == f"{second}/clusters/wec4"
    for name in sim.names:
        namespaces = sim.kubectl(name, "get", "namespaces", "-o", "name").stdout.split()
        assert set(namespaces) >= {"namespace/default", "namespace/kube-system", "namespace/kube-public",
                                   "namespace/kube-node-lease"}
    # On --listen, a cluster of the other process is a redirect to it, and the admin API covers every cluster.
    with sim.client() as admin:
        moved = admin.get("/clusters/wec3/api/v1/namespaces?limit=1")
        assert moved.status_code == 307
        assert moved.headers["location"] == f"{second}/clusters/wec3/api/v1/namespaces?limit=1"
        assert [c["name"] for c in admin.get("/sim/v1/clusters").json()["clusters"]] == sim.names


def test_nodes_listed_with_allocatable(sim: Sim) -> None:
    table = sim.kubectl("wec1", "get", "nodes").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in table[1:]] == [["wec1-node-1", "Ready"], ["wec1-node-2", "Ready"]]
    nodes = sim.get("wec1", "nodes")["items"]
    for node in nodes:
        assert node["status"]["allocatable"]["cpu"] == "8"
        assert node["status"]["allocatable"]["memory"] == "32Gi"
        assert node["status"]["allocatable"]["pods"] == "110"
        assert node["status"]["capacity"]["cpu"] == "8"
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert labels["topology.kubernetes.io/zone"].startswith("zone-")
        assert labels["node.kubernetes.io/instance-type"]
        assert node["spec"]["podCIDR"]
    # Per-cluster shape: wec2 has one node with 2 CPUs.
    wec2 = sim.get("wec2", "nodes")["items"]
    assert [(n["metadata"]["name"], n["status"]["allocatable"]["cpu"]) for n in wec2] == [("wec2-node-1", "2")]


# --- workloads ----------------------------------------------------------------------------------------------


def test_deployment_rollout_scale_and_image_change(sim: Sim) -> None:
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(deployment("web", 3)))
    sim.kubectl("wec1", "rollout", "status", "deployment/web", "--timeout=60s")
    rs_list = sim.get("wec1", "replicasets", "-l", "app=web")["items"]
    assert len(rs_list) == 1
    rs = rs_list[0]
    web = sim.get("wec1", "deployment", "web")
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    owner = rs["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Deployment", "web",
                                                                                 web["metadata"]["uid"], True)
    assert rs["status"]["readyReplicas"] == 3 and rs["status"]["availableReplicas"] == 3
    pods = pods_of(sim, "wec1", "app=web")
    assert len(pods) == 3 and running(pods)
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{pod_hash}-")
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert pod["status"]["podIP"]
    conditions = {c["type"]: c for c in web["status"]["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conditions["Progressing"]["message"] == f'ReplicaSet "web-{pod_hash}" has successfully progressed.'
    assert web["status"]["observedGeneration"] == web["metadata"]["generation"]

    wide = sim.kubectl("wec1", "get", "pods", "-l", "app=web", "-o", "wide").stdout.splitlines()
    header = wide[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in header
    node_col = header.index("NODE")
    nodes = {line.split()[node_col] for line in wide[1:]}
    assert nodes == {"wec1-node-1", "wec1-node-2"}  # round-robin placement used both nodes
    assert all(line.split()[1:3] == ["1/1", "Running"] for line in wide[1:])

    before = {p["metadata"]["name"] for p in pods}
    sim.kubectl("wec1", "scale", "deployment/web", "--replicas=1")
    remaining = wait_for(lambda: (lambda ps: ps if len(ps) == 1 else None)(pods_of(sim, "wec1", "app=web")),
                         message="scale down to one pod")
    assert {p["metadata"]["name"] for p in remaining} < before  # two deleted, one kept, none created

    sim.kubectl("wec1", "set", "image", "deployment/web", "main=nginx:1.26")
    sim.kubectl("wec1", "rollout", "status", "deployment/web", "--timeout=60s")
    rs_list = sim.get("wec1", "replicasets", "-l", "app=web")["items"]
    by_image = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rs_list}
    assert set(by_image) == {"nginx:1.25", "nginx:1.26"}
    assert by_image["nginx:1.25"]["spec"]["replicas"] == 0
    assert by_image["nginx:1.26"]["spec"]["replicas"] == 1
    assert by_image["nginx:1.26"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    new_hash = by_image["nginx:1.26"]["metadata"]["labels"]["pod-template-hash"]
    assert new_hash != pod_hash
    pods = wait_for(lambda: (lambda ps: ps if len(ps) == 1 and running(ps) else None)(
        pods_of(sim, "wec1", "app=web")), message="one pod of the new template")
    assert pods[0]["metadata"]["labels"]["pod-template-hash"] == new_hash
    assert pods[0]["spec"]["containers"][0]["image"] == "nginx:1.26"


def test_statefulset_pods_in_order(sim: Sim) -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                                 "spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}}
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(sts))
    sim.kubectl("wec1", "rollout", "status", "statefulset/db", "--timeout=60s")
    pods = pods_of(sim, "wec1", "app=db")
    assert sorted(p["metadata"]["name"] for p in pods) == ["db-0", "db-1", "db-2"]
    assert running(pods)
    for pod in pods:
        assert pod["spec"]["hostname"] == pod["metadata"]["name"]
        assert pod["spec"]["subdomain"] == "db"
        assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == pod["metadata"]["name"]
    # OrderedReady: each pod started after the previous one was ready.
    started = [next(p for p in pods if p["metadata"]["name"] == f"db-{i}")["metadata"]["creationTimestamp"]
               for i in range(3)]
    assert started == sorted(started)
    status = sim.get("wec1", "statefulset", "db")["status"]
    assert (status["readyReplicas"], status["currentReplicas"], status["updatedReplicas"]) == (3, 3, 3)
    assert status["currentRevision"] == status["updateRevision"]


def test_daemonset_one_pod_per_node(sim: Sim) -> None:
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"containers": [{"name": "agent", "image": "busybox"}]}}}}
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(ds))
    sim.kubectl("wec1", "rollout", "status", "daemonset/agent", "--timeout=60s")
    pods = pods_of(sim, "wec1", "app=agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["wec1-node-1", "wec1-node-2"]
    status = sim.get("wec1", "daemonset", "agent")["status"]
    assert (status["desiredNumberScheduled"], status["numberReady"], status["numberAvailable"]) == (2, 2, 2)


def test_job_completes_within_parallelism(sim: Sim) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "crunch"},
           "spec": {"completions": 4, "parallelism": 2, "template": {
               # Each pod runs two seconds once started, long enough to observe the parallelism.
               "metadata": {"annotations": {"sim.spacehub.io/run-seconds": "2"}},
               "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]}}}}
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(job))
    first = wait_for(lambda: (lambda ps: ps if len(ps) == 2 and running(ps) else None)(
        pods_of(sim, "wec1", "job-name=crunch")), message="two running pods")
    assert len(pods_of(sim, "wec1", "job-name=crunch")) == 2  # parallelism 2: nothing more while they run
    assert sim.get("wec1", "job", "crunch")["status"]["active"] == 2
    sim.kubectl("wec1", "wait", "--for=condition=complete", "job/crunch", "--timeout=60s")
    status = sim.get("wec1", "job", "crunch")["status"]
    assert status["succeeded"] == 4 and "active" not in status and status["completionTime"]
    pods = pods_of(sim, "wec1", "job-name=crunch")
    assert len(pods) == 4 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    assert {p["metadata"]["name"] for p in first} <= {p["metadata"]["name"] for p in pods}
    table = sim.kubectl("wec1", "get", "pods", "-l", "job-name=crunch").stdout
    assert table.count("Completed") == 4


def test_custom_resource_gets_status_from_rule(sim: Sim) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "workerpools.ate.dev"},
           "spec": {"group": "ate.dev", "scope": "Namespaced",
                    "names": {"plural": "workerpools", "singular": "workerpool", "kind": "WorkerPool"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                                      "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                  }}}}]}}
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(crd))
    sim.kubectl("wec1", "wait", "--for=condition=established", "crd/workerpools.ate.dev", "--timeout=30s")
    pool = {"apiVersion": "ate.dev/v1", "kind": "WorkerPool", "metadata": {"name": "pool"}, "spec": {"replicas": 4}}
    wait_for(lambda: sim.kubectl("wec1", "create", "-f", "-", input=_yaml(pool), check=False).returncode == 0,
             message="WorkerPool served")

    def status() -> dict[str, Any] | None:
        return sim.get("wec1", "workerpool", "pool").get("status")

    got = wait_for(lambda: (lambda s: s if s and s.get("replicas") == 4 else None)(status()),
                   message="status from the rule")
    assert got == {"replicas": 4, "readyReplicas": 4, "observedGeneration": 1, "phase": "Ready"}
    sim.kubectl("wec1", "patch", "workerpool", "pool", "--type=merge", "-p", '{"spec":{"replicas":7}}')
    wait_for(lambda: (status() or {}).get("replicas") == 7, message="status following the spec")
    assert status() == {"replicas": 7, "readyReplicas": 7, "observedGeneration": 2, "phase": "Ready"}


def test_pending_pod_scheduled_when_a_node_joins(sim: Sim) -> None:
    # wec2 has one node with 2 CPUs: the first pod fits, the second does not.
    for name in ("first", "hungry"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "main", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1500m"}}}]}}
        sim.kubectl("wec2", "create", "-f", "-", input=_yaml(pod))
    sim.kubectl("wec2", "wait", "--for=condition=Ready", "pod/first", "--timeout=30s")

    def unschedulable() -> str | None:
        got = sim.get("wec2", "pod", "hungry")
        cond = next((c for c in got["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)
        return cond["message"] if cond and cond.get("reason") == "Unschedulable" else None

    message = wait_for(unschedulable, message="PodScheduled=False")
    assert message == "0/1 nodes are available: 1 Insufficient cpu."
    assert "Pending" in sim.kubectl("wec2", "get", "pod", "hungry").stdout
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "big", "labels": {"kubernetes.io/hostname": "big"}}}
    sim.kubectl("wec2", "create", "-f", "-", input=_yaml(node))
    sim.kubectl("wec2", "wait", "--for=condition=Ready", "node/big", "--timeout=30s")
    sim.kubectl("wec2", "wait", "--for=condition=Ready", "pod/hungry", "--timeout=30s")
    assert sim.get("wec2", "pod", "hungry")["spec"]["nodeName"] == "big"


def test_clusters_are_isolated(sim: Sim) -> None:
    sim.kubectl("wec1", "create", "configmap", "only-in-wec1", "--from-literal=a=b")
    assert sim.kubectl("wec2", "get", "configmap", "only-in-wec1", check=False).returncode != 0
    assert all(n["metadata"]["name"].startswith(("wec3-",)) for n in sim.get("wec3", "nodes")["items"])
    with httpx.Client(verify=sim.verify(), timeout=10,
                      headers={"Authorization": f"Bearer {sim.cluster_token('wec1')}"}) as c:
        assert c.get(f"{sim.base_url}/clusters/wec1/api/v1/namespaces").status_code == 200
        assert c.get(f"{sim.base_url}/clusters/wec2/api/v1/namespaces").status_code == 403
        assert c.get(f"{sim.base_url}/sim/v1/clusters").status_code == 403
    with httpx.Client(verify=sim.verify(), timeout=10) as c:
        assert c.get(f"{sim.base_url}/clusters/wec1/api/v1/namespaces").status_code == 401


# --- faults -------------------------------------------------------------------------------------------------


def test_fault_refuse_closes_connections(sim: Sim) -> None:
    with sim.client("wec3") as watcher_client, watcher_client.stream(
            "GET", "/api/v1/namespaces", params={"watch": "true"}) as watch:
        assert watch.status_code == 200
        assert sim.set_faults("wec3", refuse=True) == {"refuse": True, "latencySeconds": 0.0, "failWrites": False}
        with pytest.raises(httpx.TransportError):  # the watch in flight is cut, not answered
            for _ in watch.iter_lines():
                pass
    try:
        with sim.client("wec3") as c, pytest.raises(httpx.TransportError):
            c.get("/api/v1/namespaces")
        proc = sim.kubectl("wec3", "get", "--raw", "/api/v1/namespaces", check=False)
        assert proc.returncode != 0
        assert "Unable to connect to the server" in proc.stderr and "EOF" in proc.stderr, proc.stderr
        assert "500" not in proc.stderr and "503" not in proc.stderr
        sim.kubectl("wec1", "get", "namespaces")  # other clusters are unaffected
    finally:
        sim.clear_faults("wec3")
    sim.kubectl("wec3", "get", "namespaces")


def test_fault_latency_delays_requests(sim: Sim) -> None:
    sim.set_faults("wec3", latencySeconds=0.6)
    try:
        with sim.client("wec3") as c:
            started = time.monotonic()
            assert c.get("/api/v1/namespaces").status_code == 200
            assert time.monotonic() - started >= 0.6
        started = time.monotonic()
        sim.kubectl("wec3", "get", "--raw", "/api/v1/namespaces/default")
        assert time.monotonic() - started >= 0.6
    finally:
        sim.clear_faults("wec3")
    with sim.client("wec3") as c:
        started = time.monotonic()
        assert c.get("/api/v1/namespaces").status_code == 200
        assert time.monotonic() - started < 0.6


def test_fault_fail_writes_answers_500(sim: Sim) -> None:
    sim.set_faults("wec3", failWrites=True)
    try:
        proc = sim.kubectl("wec3", "create", "configmap", "blocked", check=False)
        assert proc.returncode != 0 and "Internal error occurred" in proc.stderr, proc.stderr
        with sim.client("wec3") as c:
            r = c.post("/api/v1/namespaces/default/configmaps",
                       json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "blocked"}})
            assert r.status_code == 500
            assert (r.json()["kind"], r.json()["reason"]) == ("Status", "InternalError")
            assert c.get("/api/v1/namespaces/default/configmaps").status_code == 200  # reads still work
    finally:
        sim.clear_faults("wec3")
    sim.kubectl("wec3", "create", "configmap", "blocked")


def test_fault_image_pull_failures_keep_pods_waiting_with_kubelets_reasons(sim: Sim) -> None:
    sim.set_faults("wec3", imagePullFailures=["*:missing"])
    try:
        sim.kubectl("wec3", "create", "-f", "-", input=_yaml(deployment("nopull", 1, image="nginx:missing")))

        def waiting() -> dict[str, Any] | None:
            pods = pods_of(sim, "wec3", "app=nopull")
            states = [s.get("state", {}).get("waiting") for p in pods for s in p["status"].get("containerStatuses", [])]
            return states[0] if len(states) == 1 and states[0] and states[0]["reason"] == "ImagePullBackOff" \
                else None
        state = wait_for(waiting, timeout=30, message="the pod backing off its pull")
        assert state["message"] == 'Back-off pulling image "nginx:missing"'
        pod = pods_of(sim, "wec3", "app=nopull")[0]
        assert pod["status"]["phase"] == "Pending"
        events = sim.get("wec3", "events", "--field-selector", f"involvedObject.name={pod['metadata']['name']}")
        reasons = {(e["type"], e["reason"]) for e in events["items"]}
        assert {("Warning", "Failed"), ("Normal", "BackOff")} <= reasons
        failed = [e["message"] for e in events["items"] if e["reason"] == "Failed"]
        assert any("Failed to pull image \"nginx:missing\"" in m for m in failed)
        assert sim.get("wec3", "deployment", "nopull")["status"].get("availableReplicas", 0) == 0
        with sim.client() as admin:
            assert admin.get("/sim/v1/clusters/wec3/faults").json()["imagePullFailures"] == ["*:missing"]
    finally:
        sim.clear_faults("wec3")
    # Cleared, the next retry pulls: the pod runs.
    wait_for(lambda: running(pods_of(sim, "wec3", "app=nopull")), timeout=60, message="the pod running")


def test_faults_from_file_and_admin_api(sim: Sim) -> None:
    with sim.client() as admin:
        listing = admin.get("/sim/v1/clusters").json()["clusters"]
        assert [c["name"] for c in listing] == sim.names
        assert listing[0]["server"] == f"{sim.base_url}/clusters/wec1" and listing[0]["nodes"] == 2
        assert admin.get("/sim/v1/clusters/wec4/faults").json() == {"refuse": False, "latencySeconds": 0.3,
                                                                    "failWrites": True}
        assert admin.put("/sim/v1/clusters/wec4/faults", json={"refuse": "yes"}).status_code == 400
        assert admin.put("/sim/v1/clusters/wec4/faults", json={"latency": 1}).status_code == 400
        assert admin.put("/sim/v1/clusters/nope/faults", json={}).status_code == 404
    with sim.client("wec4") as c:
        started = time.monotonic()
        assert c.get("/api/v1/namespaces").status_code == 200
        assert time.monotonic() - started >= 0.3
        assert c.post("/api/v1/namespaces/default/configmaps", json={
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}).status_code == 500
    sim.clear_faults("wec4")
    sim.kubectl("wec4", "create", "configmap", "x")


# --- process ------------------------------------------------------------------------------------------------


def test_sigterm_and_restart_keep_clusters(tmp_path: Path) -> None:
    s = Sim(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / "home", clusters=1, insecure_http=True,
            extra_args=["--ready-delay", "0.1"])
    s.start()
    try:
        s.kubectl("wec1", "create", "-f", "-", input=_yaml(deployment("keep", 2)))
        s.kubectl("wec1", "rollout", "status", "deployment/keep", "--timeout=60s")
        uid = s.get("wec1", "deployment", "keep")["metadata"]["uid"]
    finally:
        code = s.stop(signal.SIGTERM)
    assert s.stopped_cleanly(code), s.log()[-3000:]

    restarted = Sim(data_dir=tmp_path / "data", port=s.port, home=tmp_path / "home", clusters=1,
                    insecure_http=True, extra_args=["--ready-delay", "0.1", "--nodes-per-cluster", "1"])
    restarted.start()
    try:
        assert restarted.get("wec1", "deployment", "keep")["metadata"]["uid"] == uid
        assert [n["metadata"]["name"] for n in restarted.get("wec1", "nodes")["items"]] == ["wec1-node-1"]
        # Pods of the removed node are replaced on the remaining one.
        wait_for(lambda: (lambda ps: len(ps) == 2 and running(ps) and {p["spec"]["nodeName"] for p in ps}
                          == {"wec1-node-1"})(pods_of(restarted, "wec1", "app=keep")),
                 message="pods moved to the remaining node")
        cfg = yaml.safe_load(restarted.kubeconfig("wec1").read_text())
        assert cfg["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{s.port}/clusters/wec1"
    finally:
        assert restarted.stopped_cleanly(restarted.stop())


def test_bad_arguments_fail_with_a_message(tmp_path: Path) -> None:
    env = dict(os.environ)
    bad_rules = tmp_path / "rules.yaml"
    bad_rules.write_text(json.dumps([{"kind": "X", "set": {".spec.x": 1}}]))
    for args, message in [
        (["--clusters", "0"], "--clusters must be at least 1"),
        (["--clusters", "2", "--node-cpu", "wec9=4"], "there is no cluster 'wec9'"),
        (["--clusters", "1", "--node-memory", "lots"], "is not a positive quantity"),
        (["--clusters", "1", "--status-rules", str(bad_rules)], "must be a field path under .status"),
        (["--clusters", "1", "--prefix", "WEC"], "is not a valid space name"),
    ]:
        proc = subprocess.run([str(BIN / "spacehub"), "sim", "serve", "--data-dir", str(tmp_path / "d"), *args],
                              capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode != 0 and message in proc.stderr, (args, proc.stderr)


# --- autoscaling --------------------------------------------------------------------------------------------


def test_hpa_scales_to_the_cluster_cpu_load(sim: Sim) -> None:
    """An autoscaling/v2 HPA: the simulated controller scales the Deployment from the cluster's cpuLoad knob (set on
    wec3, a cluster of the second process), through ``scale`` as kube's field manager."""
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "busy"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "busy"},
                    "minReplicas": 1, "maxReplicas": 6, "metrics": [{"type": "Resource", "resource": {
                        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}
    sim.kubectl("wec3", "create", "-f", "-", input=_yaml(deployment("busy", 2)))
    sim.kubectl("wec3", "create", "-f", "-", input=_yaml(hpa))

    def hpa_status() -> dict[str, Any]:
        return dict(sim.get("wec3", "hpa", "busy").get("status") or {})

    def conditions() -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c["reason"]) for c in hpa_status().get("conditions") or []}

    wait_for(lambda: conditions().get("ScalingActive") == ("False", "FailedGetResourceMetric"), timeout=30,
             message="no metrics while the cluster has no cpuLoad")
    assert sim.get("wec3", "deployment", "busy")["spec"]["replicas"] == 2
    try:
        assert sim.set_faults("wec3", cpuLoad=250)["cpuLoad"] == 250
        wait_for(lambda: (d := sim.get("wec3", "deployment", "busy"))["spec"]["replicas"] == 5
                 and d["status"].get("readyReplicas") == 5, timeout=30, message="busy scaled to ceil(250/50) = 5")
        wait_for(lambda: hpa_status().get("desiredReplicas") == 5 and hpa_status().get("currentReplicas") == 5
                 and conditions().get("ScalingActive") == ("True", "ValidMetricFound"), timeout=30,
                 message="the HPA's status at 5 replicas")
        assert hpa_status()["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
        with sim.client("wec3") as c:  # the same load as metrics-server's PodMetrics: 2.5 cores over 5 pods
            listed = c.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", params={"labelSelector": "app=busy"})
        assert listed.status_code == 200, listed.text
        assert [p["containers"][0]["usage"]["cpu"] for p in listed.json()["items"]] == ["500m"] * 5
        managers = {f["manager"]: f.get("subresource") for f in
                    sim.get("wec3", "deployment", "busy", "--show-managed-fields")["metadata"]["managedFields"]}
        assert managers.get("horizontal-pod-autoscaler") == "scale", managers
        sim.set_faults("wec3", cpuLoad=900)  # 18 pods' worth, capped by maxReplicas
        wait_for(lambda: conditions().get("ScalingLimited") == ("True", "TooManyReplicas")
                 and sim.get("wec3", "deployment", "busy")["spec"]["replicas"] == 6, timeout=30,
                 message="busy at maxReplicas")
        sim.set_faults("wec3", cpuLoad=10)
        wait_for(lambda: sim.get("wec3", "deployment", "busy")["spec"]["replicas"] == 1, timeout=30,
                 message="busy scaled down to minReplicas")
        bad = sim.client().put("/sim/v1/clusters/wec3/faults", json={"cpuLoad": -1})
        assert bad.status_code == 400 and "cpuLoad" in bad.json()["message"], bad.text
    finally:
        sim.clear_faults("wec3")
        sim.kubectl("wec3", "delete", "hpa,deployment", "busy")


def test_kubectl_autoscale_and_autoscaling_v1_on_a_simulated_cluster(sim: Sim) -> None:
    """The simulator serves the same API code: ``kubectl autoscale`` (a protobuf autoscaling/v2 body) succeeds on its
    first try, and the HPA the simulated controller reports on reads through autoscaling/v1 too."""
    sim.kubectl("wec1", "create", "-f", "-", input=_yaml(deployment("scaled", 1)))
    try:
        made = sim.kubectl("wec1", "-v=1", "autoscale", "deployment", "scaled", "--min=1", "--max=3",
                           "--cpu-percent=70")
        assert "Falling back" not in made.stderr
        assert sim.get("wec1", "hpa", "scaled")["spec"]["metrics"][0]["resource"]["target"] == {
            "type": "Utilization", "averageUtilization": 70}
        wait_for(lambda: sim.get("wec1", "hpa", "scaled")["status"].get("conditions"), timeout=30,
                 message="the simulated HPA controller reports on the HPA")
        v1 = sim.get("wec1", "horizontalpodautoscalers.v1.autoscaling", "scaled")
        assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 70
        assert "autoscaling.alpha.kubernetes.io/conditions" in v1["metadata"]["annotations"]
    finally:
        sim.kubectl("wec1", "delete", "hpa,deployment", "scaled")
