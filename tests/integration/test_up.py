"""``spacehub up`` (what ``make run`` starts): a hub plus simulated clusters with syncers, the README flow."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import yaml

from tests.harness import BIN, KUBECTL, free_port, wait_for
from tests.processes import Program
from tests.syncer_harness import environ_without_proxies

PLACEMENT = """apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: everywhere}
spec:
  locationSelectors: [{matchLabels: {env: dev}}]
  downsync: [{apiGroup: apps, resources: [deployments], namespaces: [default]}]
"""


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_runs_the_readme_flow_and_stops_everything(tmp_path: Path) -> None:
    hub_port, sim_port = free_port(), free_port()
    data = tmp_path / "data"
    env = environ_without_proxies() | {"HOME": str(tmp_path), "KUBECONFIG": str(data / "admin.kubeconfig")}
    up = Program(tmp_path / "up.log")
    up.start([str(BIN / "spacehub"), "up", "--listen", f"127.0.0.1:{hub_port}", "--sim-listen",
              f"127.0.0.1:{sim_port}", "--data-dir", str(data)], env=env, cwd=tmp_path)
    try:
        up.wait_ready(lambda: "spacehub is up" in up.log(), timeout=120)

        def kubectl(*args: str, kubeconfig: Path | None = None, stdin: str | None = None) -> str:
            cmd = [str(KUBECTL), *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args]
            done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        subprocess.run([str(BIN / "spacehub"), "space", "create", "team-a"], env=env, check=True, timeout=60)
        subprocess.run([str(BIN / "kubectl-space"), "use", "team-a"], env=env, check=True, timeout=60)
        kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
        kubectl("apply", "-f", "-", stdin=PLACEMENT)
        cluster = data / "sim" / "kubeconfigs" / "wec2.kubeconfig"
        deployed = wait_for(lambda: yaml.safe_load(kubectl("get", "deployments", "-o", "yaml", kubeconfig=cluster))
                            ["items"], timeout=60, message="web in wec2")
        assert deployed[0]["metadata"]["name"] == "web"
    finally:
        code = up.stop(signal.SIGTERM)
    assert code == 0, up.log()[-3000:]
    assert not _listening(hub_port) and not _listening(sim_port)
