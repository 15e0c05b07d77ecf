"""Debugging simulated pods with real kubectl: logs, exec, attach and port-forward against ``spacehub sim serve``.

One simulator (one cluster, TLS, the cluster's own kubeconfig) serves the module: a Deployment ``web`` (one
container that declares port 80, with an env var and a ConfigMap volume) and a pod ``duo`` of two containers
(``a`` declares 8080). kubectl 1.37 speaks WebSocket to it (exec and attach: ``v5.channel.k8s.io``; port-forward:
SPDY tunnelled in ``SPDY/3.1+portforward.k8s.io``). Waits poll with deadlines; nothing sleeps.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.harness import KUBECTL, free_port, stop_process, wait_for
from tests.processes import Output
from tests.sim_harness import Sim

CLUSTER = "wec1"


def _yaml(*objs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objs)


WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "containers": [{"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                    "env": [{"name": "GREETING", "value": "hello sim"}],
                                    "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}],
                    "volumes": [{"name": "cfg", "configMap": {"name": "app-config"}}]}}}}
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config"},
          "data": {"app.conf": "mode=simulated\n"}}
DUO = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "duo"},
       "spec": {"containers": [{"name": "a", "image": "busybox:1", "stdin": True, "ports": [{"containerPort": 8080}]},
                               {"name": "b", "image": "busybox:2"}]}}


def terminal_shows(master: int, seen: bytearray, token: bytes) -> bool:
    """Whether a terminal's output so far (read from its ``master`` end into ``seen``) holds ``token``."""
    while select.select([master], [], [], 0)[0]:
        try:
            seen.extend(os.read(master, 4096))
        except OSError:
            break
    return token in seen


def kubectl_bg(sim: Sim, *args: str, stdin: Any = subprocess.DEVNULL) -> Output:
    assert KUBECTL
    return Output(subprocess.Popen([KUBECTL, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=sim.env(CLUSTER)))


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    base = tmp_path_factory.mktemp("simpods")
    s = Sim(data_dir=base / "data", port=free_port(), home=base / "home", clusters=1,
            extra_args=["--ready-delay", "0.2"])
    s.start()
    s.kubectl(CLUSTER, "apply", "-f", "-", input=_yaml(CONFIG, WEB, DUO))
    s.kubectl(CLUSTER, "rollout", "status", "deployment/web", "--timeout=60s")
    s.kubectl(CLUSTER, "wait", "--for=condition=Ready", "pod/duo", "--timeout=60s")
    yield s
    if s.proc is not None:
        assert s.stopped_cleanly(s.stop()), s.log()[-3000:]


def web_pod(sim: Sim) -> str:
    return str(sim.get(CLUSTER, "pods", "-l", "app=web")["items"][0]["metadata"]["name"])


def add_lines(sim: Sim, pod: str, lines: list[str], **extra: Any) -> dict[str, Any]:
    with sim.client() as admin:
        r = admin.post(f"/sim/v1/clusters/{CLUSTER}/namespaces/default/pods/{pod}/log", json={"lines": lines, **extra})
        assert r.status_code == 200, r.text
        return dict(r.json())


# --- logs ---------------------------------------------------------------------------------------------------


def test_logs_with_kubectls_options(sim: Sim) -> None:
    pod = web_pod(sim)
    node = sim.get(CLUSTER, "pod", pod)["spec"]["nodeName"]
    opening = f"{CLUSTER}/{pod}/nginx started\nimage: nginx:1.25\nnode: {node}\n"
    assert sim.kubectl(CLUSTER, "logs", "deploy/web").stdout == opening
    assert sim.kubectl(CLUSTER, "logs", pod, "-c", "nginx").stdout == opening
    assert sim.kubectl(CLUSTER, "logs", pod, "--tail=1").stdout == f"node: {node}\n"
    assert sim.kubectl(CLUSTER, "logs", pod, "--since=1h").stdout == opening
    assert sim.kubectl(CLUSTER, "logs", pod, "--limit-bytes=5").stdout == f"{CLUSTER}/"[:5]
    stamped = sim.kubectl(CLUSTER, "logs", pod, "--timestamps").stdout.splitlines()
    assert len(stamped) == 3
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z .+", line) for line in stamped), stamped
    previous = sim.kubectl(CLUSTER, "logs", pod, "--previous", check=False)
    assert previous.returncode == 1
    assert previous.stderr.strip() == (f'Error from server (BadRequest): previous terminated container "nginx" in pod '
                                       f'"{pod}" not found')
    added = add_lines(sim, pod, ["first added", "second added"])
    assert (added["container"], added["added"]) == ("nginx", 2)
    assert sim.kubectl(CLUSTER, "logs", pod, "--tail=2").stdout == "first added\nsecond added\n"
    with sim.client(CLUSTER) as c:
        r = c.get(f"/api/v1/namespaces/default/pods/{pod}/log", params={"sinceTime": "2999-01-01T00:00:00Z"})
        assert (r.status_code, r.text, r.headers["content-type"]) == (200, "", "text/plain; charset=utf-8")
        r = c.get(f"/api/v1/namespaces/default/pods/{pod}/log", params={"tailLines": "-1"})
        assert (r.status_code, r.json()["reason"]) == (422, "Invalid")
        assert r.json()["message"] == (f'PodLogOptions "{pod}" is invalid: tailLines: Invalid value: -1: must be '
                                       "greater than or equal to 0")


def test_log_refusals_are_upstreams(sim: Sim) -> None:
    with sim.client(CLUSTER) as c:
        r = c.get("/api/v1/namespaces/default/pods/duo/log")
        assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
            400, "BadRequest", "a container name must be specified for pod duo, choose one of: [a b]")
        r = c.get("/api/v1/namespaces/default/pods/duo/log", params={"container": "c"})
        assert r.json()["message"] == "container c is not valid for pod duo"
        r = c.get("/api/v1/namespaces/default/pods/nope/log")
        assert (r.status_code, r.json()["message"]) == (404, 'pods "nope" not found')
        assert c.post("/api/v1/namespaces/default/pods/duo/log").status_code == 405
    proc = sim.kubectl(CLUSTER, "logs", "duo")  # kubectl picks the first container itself, and says so
    assert proc.stdout.startswith(f"{CLUSTER}/duo/a started\n") and 'Defaulted container "a"' in proc.stderr
    assert sim.kubectl(CLUSTER, "logs", "duo", "-c", "b").stdout.startswith(f"{CLUSTER}/duo/b started\n")


def test_logs_of_a_pod_not_yet_running(sim: Sim) -> None:
    sim.set_faults(CLUSTER, imagePullFailures=["*:missing"])
    try:
        sim.kubectl(CLUSTER, "run", "stuck", "--image=nginx:missing")
        wait_for(lambda: sim.get(CLUSTER, "pod", "stuck").get("status", {}).get("containerStatuses"),
                 message="pull failing")
        proc = sim.kubectl(CLUSTER, "logs", "stuck", check=False)
        assert proc.returncode == 1
        assert re.search(r'container "stuck" in pod "stuck" is waiting to start: (image can\'t be pulled|trying and '
                         r"failing to pull image)", proc.stderr), proc.stderr
        proc = sim.kubectl(CLUSTER, "exec", "stuck", "--", "hostname", check=False)
        assert proc.returncode == 1 and 'container not found ("stuck")' in proc.stderr, proc.stderr
        proc = sim.kubectl(CLUSTER, "port-forward", "stuck", "8080:80", check=False)
        assert proc.returncode == 1 and "pod is not running" in proc.stderr, proc.stderr
    finally:
        sim.clear_faults(CLUSTER)
        sim.kubectl(CLUSTER, "delete", "pod", "stuck", "--wait=false")


def test_previous_log_of_a_restarted_container(sim: Sim) -> None:
    status = sim.get(CLUSTER, "pod", "duo")["status"]
    started = status["containerStatuses"][1]["state"]["running"]["startedAt"]
    statuses = [{**cs, "restartCount": 1, "lastState": {"terminated": {
        "exitCode": 2, "reason": "Error", "startedAt": "2020-01-01T00:00:00Z", "finishedAt": started}}}
        if cs["name"] == "b" else cs for cs in status["containerStatuses"]]
    sim.kubectl(CLUSTER, "patch", "pod", "duo", "--subresource=status", "--type=merge",
                "-p", yaml.safe_dump({"status": {"containerStatuses": statuses}}))
    add_lines(sim, "duo", ["panic: boom"], container="b", previous=True)
    previous = sim.kubectl(CLUSTER, "logs", "duo", "-c", "b", "--previous", "--timestamps").stdout.splitlines()
    assert previous[0] == f"2020-01-01T00:00:00.000000000Z {CLUSTER}/duo/b started"
    assert previous[-1].endswith(" panic: boom")
    assert "panic: boom" not in sim.kubectl(CLUSTER, "logs", "duo", "-c", "b").stdout


def test_follow_shows_a_line_added_later_within_a_second(sim: Sim) -> None:
    pod = web_pod(sim)
    follow = kubectl_bg(sim, "logs", "-f", pod, "--tail=1")
    try:
        wait_for(lambda: follow.text.endswith("\n"), message="the followed log's tail")
        added = time.monotonic()
        add_lines(sim, pod, ["fresh line"])
        wait_for(lambda: "fresh line\n" in follow.text, timeout=1.0, interval=0.01, message="the line within 1 s")
        assert time.monotonic() - added < 1.0
        assert follow.proc.poll() is None
    finally:
        follow.stop()


def test_follow_ends_when_the_pod_goes(sim: Sim) -> None:
    sim.kubectl(CLUSTER, "run", "brief", "--image=busybox:1")
    sim.kubectl(CLUSTER, "wait", "--for=condition=Ready", "pod/brief", "--timeout=60s")
    follow = kubectl_bg(sim, "logs", "-f", "brief")
    try:
        wait_for(lambda: "node: " in follow.text, message="the followed log")
        sim.kubectl(CLUSTER, "delete", "pod", "brief", "--wait=false")
        assert wait_for(follow.ended, message="kubectl logs -f to end") and \
            follow.proc.returncode == 0, follow.errors
    finally:
        follow.stop()


# --- exec ---------------------------------------------------------------------------------------------------


def test_exec_commands_and_exit_codes(sim: Sim) -> None:
    pod = web_pod(sim)
    assert sim.kubectl(CLUSTER, "exec", pod, "--", "hostname").stdout == f"{pod}\n"
    assert sim.kubectl(CLUSTER, "exec", "deploy/web", "--", "sh", "-c", "echo hi").stdout == "hi\n"
    assert sim.kubectl(CLUSTER, "exec", pod, "--", "sh", "-c", "echo $GREETING; cat /etc/spacehub-cluster "
                                                            "/etc/app/app.conf").stdout == \
        f"hello sim\n{CLUSTER}\nmode=simulated\n"
    env = sim.kubectl(CLUSTER, "exec", pod, "--", "env").stdout.splitlines()
    assert f"HOSTNAME={pod}" in env and "GREETING=hello sim" in env
    failed = sim.kubectl(CLUSTER, "exec", pod, "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3 and "command terminated with exit code 3" in failed.stderr
    missing = sim.kubectl(CLUSTER, "exec", pod, "--", "no-such-tool", "--help", check=False)
    assert missing.returncode == 127 and "sh: no-such-tool: not found" in missing.stderr
    assert sim.kubectl(CLUSTER, "exec", "duo", "-c", "b", "--", "hostname").stdout == "duo\n"
    # without -i, stdin is at its end: a shell or cat reading it ends at once
    assert sim.kubectl(CLUSTER, "exec", pod, "--", "sh", timeout=20).returncode == 0
    assert sim.kubectl(CLUSTER, "exec", pod, "--", "cat", timeout=20).stdout == ""


def test_exec_with_stdin_and_tty_flags(sim: Sim) -> None:
    pod = web_pod(sim)
    text = "".join(f"line {i}\n" for i in range(2000))
    assert sim.kubectl(CLUSTER, "exec", "-i", pod, "--", "cat", input=text).stdout == text
    # -t without a terminal: kubectl says so and goes on without one
    proc = sim.kubectl(CLUSTER, "exec", "-i", "-t", pod, "--", "sh", "-c", "cat; exit 5", input="piped\n", check=False)
    assert proc.returncode == 5 and proc.stdout == "piped\n"
    assert "Unable to use a TTY" in proc.stderr


def test_exec_in_a_terminal(sim: Sim) -> None:
    assert KUBECTL
    pod = web_pod(sim)
    master, slave = pty.openpty()
    proc = subprocess.Popen([KUBECTL, "exec", "-it", pod, "--", "sh"], stdin=slave, stdout=slave, stderr=slave,
                            env=sim.env(CLUSTER), start_new_session=True)
    os.close(slave)
    seen = bytearray()

    def shows(token: bytes) -> bool:
        return terminal_shows(master, seen, token)

    try:
        wait_for(lambda: shows(b"/ # "), message="the prompt")
        os.write(master, b"echo $TERM $HOSTNAME\r")
        wait_for(lambda: shows(f"xterm {pod}\r\n".encode()), message="the command's output")
        os.write(master, b"exit 4\r")
        assert proc.wait(timeout=20) == 4
    finally:
        stop_process(proc)
        os.close(master)
    assert b"echo $TERM $HOSTNAME\r\n" in seen  # the terminal echoed what was typed


def test_exec_without_websockets_is_refused_clearly(sim: Sim) -> None:
    env = {**sim.env(CLUSTER), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    assert KUBECTL
    proc = subprocess.run([KUBECTL, "exec", web_pod(sim), "--", "hostname"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 1 and "SPDY is not served by this simulated cluster" in proc.stderr, proc.stderr
    with sim.client(CLUSTER) as c:
        r = c.post(f"/api/v1/namespaces/default/pods/{web_pod(sim)}/exec", params={"command": "ls", "stdout": "1"})
        assert (r.status_code, r.json()["message"]) == (400, "Upgrade request required")
        r = c.post("/api/v1/namespaces/default/pods/duo/exec", params={"command": "ls", "stdout": "1"})
        assert r.json()["message"] == "a container name must be specified for pod duo, choose one of: [a b]"


def _websocket(sim: Sim, path: str, protocols: list[str], token: str | None = None) -> ClientConnection:
    url = sim.cluster_url(CLUSTER).replace("https://", "wss://") + path
    headers = {"Authorization": f"Bearer {token or sim.cluster_token(CLUSTER)}"}
    return connect(url, subprotocols=protocols, additional_headers=headers,  # type: ignore[arg-type]
                   ssl=ssl.create_default_context(cafile=str(sim.ca_file)), open_timeout=10)


def test_exec_over_v4_frame_by_frame(sim: Sim) -> None:
    path = "/api/v1/namespaces/default/pods/duo/exec?container=a&command=sh&command=-c&command=echo+hi%3B+exit+2" \
           "&stdout=true&stderr=true"
    with _websocket(sim, path, ["v4.channel.k8s.io"]) as ws:
        assert ws.subprotocol == "v4.channel.k8s.io"
        messages = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                messages.append(ws.recv(timeout=10))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    assert messages[:2] == [b"\x01", b"\x01hi\n"]  # the opening empty stdout message, then the output
    assert messages[2][0] == 3 and len(messages) == 3
    status = orjson.loads(messages[2][1:])
    assert (status["status"], status["reason"], status["details"]["causes"]) == (
        "Failure", "NonZeroExitCode", [{"reason": "ExitCode", "message": "2"}])


def test_websocket_upgrades_are_authenticated_and_negotiated(sim: Sim) -> None:
    path = "/api/v1/namespaces/default/pods/duo/exec?container=a&command=hostname&stdout=true"
    with pytest.raises(InvalidStatus) as refused:
        _websocket(sim, path, ["v5.channel.k8s.io"], token="wrong")
    assert refused.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        _websocket(sim, path, ["channel.k8s.io"])
    assert refused.value.response.status_code == 400
    assert "none of the requested subprotocols" in orjson.loads(refused.value.response.body)["message"]
    with pytest.raises(InvalidStatus) as refused:
        _websocket(sim, path.replace("duo", "nope"), ["v5.channel.k8s.io"])
    assert refused.value.response.status_code == 404


def test_refuse_fault_cuts_sessions_in_flight(sim: Sim) -> None:
    r, w = os.pipe()
    attach = kubectl_bg(sim, "attach", "-i", "duo", "-c", "a", stdin=r)
    os.close(r)
    try:
        os.write(w, b"before the fault\n")
        wait_for(lambda: "before the fault\n" in attach.text, message="attached")
        sim.set_faults(CLUSTER, refuse=True)
        try:
            wait_for(lambda: attach.proc.poll() is not None, message="the session cut")
        finally:
            sim.clear_faults(CLUSTER)
    finally:
        os.close(w)
        attach.stop()


# --- attach -------------------------------------------------------------------------------------------------


def test_attach_gets_new_log_lines_and_echoes_stdin(sim: Sim) -> None:
    r, w = os.pipe()
    attach = kubectl_bg(sim, "attach", "-i", "duo", "-c", "a", stdin=r)
    os.close(r)
    try:
        os.write(w, b"typed into a\n")
        wait_for(lambda: "typed into a\n" in attach.text, message="stdin echoed by the main process")
        add_lines(sim, "duo", ["from the admin endpoint"], container="a")
        wait_for(lambda: "from the admin endpoint\n" in attach.text, message="a new log line on attach")
        assert attach.text.count("started") == 0  # only lines added after attaching
        assert "typed into a" in sim.kubectl(CLUSTER, "logs", "duo", "-c", "a").stdout
    finally:
        os.close(w)
        attach.stop()


# --- port-forward -------------------------------------------------------------------------------------------


def port_forward(sim: Sim, target: str, *ports: str) -> Output:
    forward = kubectl_bg(sim, "port-forward", target, *ports)
    for spec in ports:
        local = spec.split(":")[0]
        wait_for(lambda local=local: f"Forwarding from 127.0.0.1:{local}" in forward.text or
                 forward.proc.poll() is not None, message="port-forward listening")
    assert forward.proc.poll() is None, forward.errors
    return forward


def _request(sock: socket.socket, path: str) -> None:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: pod\r\n\r\n".encode())


def _response(sock: socket.socket) -> bytes:
    """One response, read to the end of its body."""
    data = b""
    while True:
        head, sep, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"Content-Length: (\d+)", head)
        if sep and length and len(body) >= int(length.group(1)):
            return data
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk


def test_port_forward_reaches_the_pods_http_server(sim: Sim) -> None:
    pod = web_pod(sim)
    local = free_port()
    forward = port_forward(sim, f"pod/{pod}", f"{local}:80")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{local}", timeout=10) as client:
            for path in ("/", "/again"):  # two requests over one kept-alive connection
                r = client.get(path)
                assert (r.status_code, r.text) == (200, f"pod={pod} cluster={CLUSTER} port=80\n")
        with socket.create_connection(("127.0.0.1", local), timeout=10) as one, \
                socket.create_connection(("127.0.0.1", local), timeout=10) as two:
            _request(one, "/one")
            _request(two, "/two")
            assert _response(two).endswith(f"pod={pod} cluster={CLUSTER} port=80\n".encode())
            assert _response(one).startswith(b"HTTP/1.1 200 OK\r\n")
            _request(one, "/one-more")
            assert _response(one).endswith(b"port=80\n")
        assert forward.text.count("Handling connection for") == 3
    finally:
        forward.stop()


def test_port_forward_to_a_declared_port_of_a_deployment(sim: Sim) -> None:
    local = free_port()
    forward = port_forward(sim, "pod/duo", f"{local}:8080")
    try:
        r = httpx.get(f"http://127.0.0.1:{local}/", timeout=10)
        assert r.text == f"pod=duo cluster={CLUSTER} port=8080\n"
    finally:
        forward.stop()


def test_port_forward_to_a_port_nothing_listens_on(sim: Sim) -> None:
    local = free_port()
    forward = port_forward(sim, f"pod/{web_pod(sim)}", f"{local}:81")
    try:
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{local}/", timeout=10)
        wait_for(forward.ended, message="port-forward giving up")
        assert "failed to connect to localhost:81" in forward.errors and "lost connection to pod" in forward.errors
        assert forward.proc.returncode == 1
    finally:
        forward.stop()


# --- discovery and shutdown ---------------------------------------------------------------------------------


def test_discovery_lists_the_streaming_subresources(sim: Sim) -> None:
    resources = {r["name"]: r for r in yaml.safe_load(sim.kubectl(CLUSTER, "get", "--raw", "/api/v1").stdout)[
        "resources"]}
    assert (resources["pods/log"]["kind"], resources["pods/log"]["verbs"]) == ("Pod", ["get"])
    for sub, kind in (("exec", "PodExecOptions"), ("attach", "PodAttachOptions"),
                      ("portforward", "PodPortForwardOptions")):
        assert (resources[f"pods/{sub}"]["kind"], resources[f"pods/{sub}"]["verbs"]) == (kind, ["create", "get"])
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]


def test_sigterm_ends_follows_and_sessions(tmp_path: Path) -> None:
    s = Sim(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / "home", clusters=1,
            extra_args=["--ready-delay", "0.1"])
    s.start()
    try:
        s.kubectl(CLUSTER, "run", "solo", "--image=busybox:1")
        s.kubectl(CLUSTER, "wait", "--for=condition=Ready", "pod/solo", "--timeout=60s")
        follow = kubectl_bg(s, "logs", "-f", "solo")
        attach = kubectl_bg(s, "attach", "solo")
        wait_for(lambda: "node: " in follow.text, message="the followed log")
        wait_for(lambda: "If you don't see a command prompt" in attach.errors, message="attached")
        started = time.monotonic()
        code = s.stop(signal.SIGTERM)
        assert time.monotonic() - started < 10
        assert s.stopped_cleanly(code), s.log()[-3000:]
        wait_for(lambda: follow.proc.poll() is not None and attach.proc.poll() is not None, message="clients ended")
    finally:
        s.stop()
