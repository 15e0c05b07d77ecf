"""Debugging from the hub (README "Debug from the hub"): plain kubectl against a workload space lists, reads,
logs, execs into, port-forwards to and deletes the pods its placements run in two simulated clusters.

Real processes throughout: the hub, ``spacehub sim serve`` with clusters wec1 and wec2, and a ``spacehub
syncer run`` per cluster (wec1's through tinyproxy). The space ``team`` places a Deployment ``api`` and a
StatefulSet ``web`` on both clusters, so ``web-0`` runs in both: wec1's keeps the name, wec2's is shown as
``web-0.wec2``. kubectl is real, with the admin's kubeconfig pointed at the space (``--server``) or a ``view``
user's. Waits poll with deadlines; nothing sleeps.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from tests.harness import KUBECTL, free_port, wait_for
from tests.integration.test_sim_pods import terminal_shows
from tests.processes import Output
from tests.proxies import ForwardProxy, require
from tests.syncer_harness import World, namespace, placement, proxy_env

pytestmark = pytest.mark.filterwarnings("ignore:Kubernetes version:UserWarning")
SPACE, NS = "team", "shop"
CONTAINER = {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}
API = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": NS},
       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "api"}},
                "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [CONTAINER]}}}}
WEB = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": NS},
       "spec": {"replicas": 1, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}}}}
READ_ONLY = "a cluster's pod shown in a space is read-only here: change the workload that owns it"


def running_pods(world: World, cluster: str) -> list[dict[str, Any]]:
    listed = world.get(cluster, f"/api/v1/namespaces/{NS}/pods") or {}
    return [p for p in listed.get("items", []) if (p.get("status") or {}).get("phase") == "Running"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require("tinyproxy")
    base = tmp_path_factory.mktemp("debug")
    w = World(base, clusters=2, sim_args=("--ready-delay", "0.2")).start()
    with ForwardProxy(base / "tinyproxy") as proxy:
        w.join("wec1", "wec1", {"env": "prod"}, env=proxy_env(w, proxy.url))
        w.join("wec2", "wec2", {"env": "prod"})
        w.hub.create_space(SPACE)
        w.apply(SPACE, namespace(NS), API, WEB, placement("both", {"env": "prod"}, [
            {"apiGroup": "apps", "resources": ["deployments", "statefulsets"], "namespaces": [NS]}]))
        for cluster in ("wec1", "wec2"):
            wait_for(lambda c=cluster: len(running_pods(w, c)) == 2, timeout=60,  # type: ignore[misc]
                     message=f"api's and web's pods running in {cluster}")
        wait_for(lambda: all(w.hub_get("root", "/api") is not None and tunnel_connected(w, c)
                             for c in ("wec1", "wec2")), timeout=30, message="both tunnels connected")
        yield w
        w.close()


def tunnel_connected(world: World, cluster: str) -> bool:
    with world.hub.client() as c:
        return bool(c.get(f"/syncer/v1/targets/{cluster}/tunnel/status").json().get("connected"))


def kubectl(world: World, *args: str, check: bool = True, input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return world.hub.kubectl(*args, space=None if env else SPACE, check=check, input=input, env=env)


def pod_named(world: World, cluster: str, app: str) -> str:
    return next(str(p["metadata"]["name"]) for p in running_pods(world, cluster)
                if p["metadata"]["labels"].get("app") == app)


def kubectl_bg(world: World, *args: str, space: str = SPACE) -> Output:
    """kubectl against ``space`` in the background, its output collected to poll."""
    assert KUBECTL
    return Output(subprocess.Popen([KUBECTL, "--server", f"{world.hub.base_url}/clusters/{space}", *args],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=world.hub.env))


# --- reading ------------------------------------------------------------------------------------------


def test_the_pods_of_both_clusters_are_listed_labelled_and_named_apart(world: World) -> None:
    wide = kubectl(world, "get", "pods", "-A", "-o", "wide").stdout
    lines = wide.splitlines()
    assert lines[0].split()[:3] == ["NAMESPACE", "NAME", "READY"] and "NODE" in lines[0]
    names = {line.split()[1]: line for line in lines[1:]}
    api1, api2 = pod_named(world, "wec1", "api"), pod_named(world, "wec2", "api")
    assert set(names) == {api1, api2, "web-0", "web-0.wec2"}, wide
    assert "wec1-node-" in names["web-0"] and "wec2-node-" in names["web-0.wec2"]
    assert "Running" in names[api2]

    listed = orjson.loads(kubectl(world, "get", "pods", "-n", NS, "-l", "app=api", "-o", "json").stdout)
    assert {(p["metadata"]["name"], p["metadata"]["labels"]["spacehub.io/cluster"]) for p in listed["items"]} == {
        (api1, "wec1"), (api2, "wec2")}
    other = orjson.loads(kubectl(world, "get", "pod", "web-0.wec2", "-n", NS, "-o", "json").stdout)
    assert other["metadata"]["labels"]["spacehub.io/cluster"] == "wec2"
    assert other["spec"]["nodeName"].startswith("wec2-node-")
    described = kubectl(world, "describe", "pod", "web-0", "-n", NS).stdout
    assert "spacehub.io/cluster=wec1" in described and "Node:" in described and "wec1-node-" in described
    missing = kubectl(world, "get", "pod", "web-0.wec3", "-n", NS, check=False)
    assert missing.returncode == 1 and 'pods "web-0.wec3" not found' in missing.stderr


def test_logs_of_a_deployment_a_container_and_a_followed_pod(world: World) -> None:
    whole = kubectl(world, "logs", "deploy/api", "-n", NS).stdout
    assert "/nginx started\nimage: nginx:1.25\nnode: " in whole
    tail = kubectl(world, "logs", "web-0.wec2", "-n", NS, "-c", "nginx", "--tail", "2").stdout
    assert tail.startswith("image: nginx:1.25\nnode: wec2-node-") and tail.count("\n") == 2

    followed = kubectl_bg(world, "logs", "-f", "web-0.wec2", "-n", NS)
    try:
        wait_for(lambda: "node: wec2-node-" in followed.text, timeout=20, message="the opening lines")
        with world.sim.client() as admin:
            added = admin.post(f"/sim/v1/clusters/wec2/namespaces/{NS}/pods/web-0/log",
                               json={"lines": ["a line added now"]})
        assert added.status_code == 200, added.text
        start = time.monotonic()
        wait_for(lambda: "a line added now\n" in followed.text, timeout=1.0, interval=0.01,
                 message=f"the added line within 1 s: {followed.text!r} {followed.errors!r}")
        assert time.monotonic() - start < 1.0
    finally:
        followed.stop()


# --- exec, port-forward -------------------------------------------------------------------------------


def test_exec_answers_from_the_pods_cluster_with_stdin_piped(world: World) -> None:
    assert kubectl(world, "exec", "web-0.wec2", "-n", NS, "--", "hostname").stdout == "web-0\n"
    assert kubectl(world, "exec", "web-0", "-n", NS, "--", "cat", "/etc/spacehub-cluster").stdout.strip() == "wec1"
    piped = kubectl(world, "exec", "-i", "web-0.wec2", "-n", NS, "--", "cat", input="through the hub\nand back\n")
    assert piped.stdout == "through the hub\nand back\n"
    failed = kubectl(world, "exec", "web-0", "-n", NS, "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3


def test_attach_through_the_hub_echoes_stdin_and_shows_new_log_lines(world: World) -> None:
    assert KUBECTL
    r, w = os.pipe()
    attach = Output(subprocess.Popen([KUBECTL, "--server", f"{world.hub.base_url}/clusters/{SPACE}", "attach", "-i",
                                      "web-0.wec2", "-n", NS], stdin=r, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=world.hub.env))
    os.close(r)
    try:
        os.write(w, b"typed through the hub\n")
        wait_for(lambda: "typed through the hub\n" in attach.text, timeout=20,
                 message=f"stdin echoed by the pod's main process: {attach.errors!r}")
        with world.sim.client() as admin:
            added = admin.post(f"/sim/v1/clusters/wec2/namespaces/{NS}/pods/web-0/log",
                               json={"lines": ["said while attached"]})
        assert added.status_code == 200, added.text
        wait_for(lambda: "said while attached\n" in attach.text, message="a new log line on the attached session")
    finally:
        os.close(w)
        attach.proc.terminate()
        attach.proc.wait(timeout=20)


def test_exec_in_a_terminal_through_the_hub(world: World) -> None:
    assert KUBECTL
    master, slave = pty.openpty()
    proc = subprocess.Popen([KUBECTL, "--server", f"{world.hub.base_url}/clusters/{SPACE}", "exec", "-it",
                             "web-0.wec2", "-n", NS, "--", "sh"], stdin=slave, stdout=slave, stderr=slave,
                            env=world.hub.env, start_new_session=True)
    os.close(slave)
    seen = bytearray()

    def shows(token: bytes) -> bool:
        return terminal_shows(master, seen, token)

    try:
        wait_for(lambda: shows(b"/ # "), timeout=20, message=f"the prompt: {bytes(seen)!r}")
        os.write(master, b"cat /etc/spacehub-cluster\r")
        wait_for(lambda: shows(b"wec2\r\n"), message="the command's output from wec2's pod")
        os.write(master, b"exit 4\r")
        assert proc.wait(timeout=20) == 4
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
        os.close(master)


def test_port_forward_reaches_the_pod_in_its_cluster(world: World) -> None:
    port = free_port()
    forward = kubectl_bg(world, "port-forward", "-n", NS, "pod/web-0.wec2", f"{port}:80")
    try:
        wait_for(lambda: "Forwarding from 127.0.0.1" in forward.text, timeout=20,
                 message=f"port-forward listening: {forward.errors}")
        with httpx.Client(timeout=10) as http:
            for _ in range(3):  # one connection, several requests
                assert http.get(f"http://127.0.0.1:{port}/").text.strip() == "pod=web-0 cluster=wec2 port=80"
    finally:
        forward.stop()


# --- writes -------------------------------------------------------------------------------------------


def test_a_clusters_pod_is_read_only_a_run_pod_is_stored_and_watched_and_delete_is_forwarded(world: World) -> None:
    for args in (("label", "pod", "web-0", "-n", NS, "x=y"), ("annotate", "pod", "web-0.wec2", "-n", NS, "x=y")):
        refused = kubectl(world, *args, check=False)
        assert refused.returncode == 1 and READ_ONLY in refused.stderr, refused.stderr
    watched = kubectl_bg(world, "get", "pods", "-n", NS, "--watch-only", "-v=6")  # -v=6: logs the watch's answer
    try:
        wait_for(lambda: "watch=true" in watched.errors, timeout=20, message=f"the watch open: {watched.errors}")
        kubectl(world, "run", "extra", "-n", NS, "--image=nginx")  # stored in the space; no placement selects it
        wait_for(lambda: "extra " in watched.text, timeout=20, message=f"the watch sees it: {watched.errors!r}")
    finally:
        watched.stop()
    extra = orjson.loads(kubectl(world, "get", "pod", "extra", "-n", NS, "-o", "json").stdout)
    assert "spacehub.io/cluster" not in extra["metadata"]["labels"] and extra["status"]["phase"] == "Pending"
    kubectl(world, "delete", "pod", "extra", "-n", NS)

    victim = pod_named(world, "wec2", "api")
    assert f'pod "{victim}" deleted' in kubectl(world, "delete", "pod", victim, "-n", NS).stdout
    world.wait_absent("wec2", f"/api/v1/namespaces/{NS}/pods/{victim}")
    wait_for(lambda: len(running_pods(world, "wec2")) == 2, timeout=60, message="the ReplicaSet's new pod")


# --- who may ------------------------------------------------------------------------------------------


def test_a_viewer_reads_and_logs_but_may_not_exec(world: World, tmp_path: Path) -> None:
    config = tmp_path / "viewer.kubeconfig"
    world.hub.spacehub("user", "create", "viola", "--space", SPACE, "--role", "view", "--out", str(config))
    env = {**world.hub.env, "KUBECONFIG": str(config)}
    assert "web-0.wec2" in kubectl(world, "get", "pods", "-n", NS, env=env).stdout
    assert "nginx started" in kubectl(world, "logs", "web-0", "-n", NS, env=env).stdout
    denied = kubectl(world, "exec", "web-0", "-n", NS, "--", "hostname", env=env, check=False)
    assert denied.returncode == 1
    assert 'User "viola" cannot create resource "pods/exec" in API group "" in the namespace "shop"' in denied.stderr
    deleted = kubectl(world, "delete", "pod", "web-0", "-n", NS, env=env, check=False)
    assert deleted.returncode == 1 and 'cannot delete resource "pods"' in deleted.stderr


# --- a cluster away, the hub restarted ----------------------------------------------------------------


def test_a_cluster_without_tunnel_is_a_warning_and_a_restarted_hub_serves_again(world: World) -> None:
    syncer = world.syncers["wec2"]
    syncer.stop()
    wait_for(lambda: not tunnel_connected(world, "wec2"), timeout=30, message="wec2's tunnel gone")
    listed = kubectl(world, "get", "pods", "-n", NS)
    assert 'Warning: cluster "wec2": cluster "wec2" has no tunnel connected' in listed.stderr, listed.stderr
    assert "web-0 " in listed.stdout and "web-0.wec2" not in listed.stdout
    syncer.start()

    assert world.hub.proc is not None
    world.hub.proc.send_signal(signal.SIGTERM)
    assert world.hub.proc.wait(timeout=20) == 0
    world.hub.proc = None
    world.hub.start()

    def logs_and_exec() -> bool:
        logs = kubectl(world, "logs", "web-0.wec2", "-n", NS, check=False)
        if logs.returncode != 0 or "\nnode: wec2-node-" not in logs.stdout:
            return False
        return kubectl(world, "exec", "web-0", "-n", NS, "--", "hostname", check=False).stdout == "web-0\n"

    wait_for(logs_and_exec, timeout=60, interval=0.5, message="logs and exec through the reconnected tunnels")
    assert yaml.safe_load(kubectl(world, "get", "pods", "-A", "-o", "yaml").stdout)["items"]
