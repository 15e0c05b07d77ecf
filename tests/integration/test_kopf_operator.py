"""A real kopf operator (``examples/kopf-operator``) runs unchanged against a space.

Two replicas of ``kopf run examples/kopf-operator/operator.py`` (separate processes, a kubeconfig for the space
with the token of the ServiceAccount the example's RBAC grants, kopf's own peering between them) serve WebApps:
their webhooks, which kopf registers itself, refuse and mutate WebApps as the hub calls them over HTTPS; the
working replica creates each WebApp's Deployment and worker Pods, which the example's EdgePlacement sends to two
simulated clusters (``spacehub sim serve --with-syncers``); their status comes back to the space, and the
operator reports it on the WebApp. Killing the working replica hands the work to the other one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness import BIN, free_port, wait_for
from tests.processes import ChildProcess
from tests.syncer_harness import World

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kopf-operator"
SPACE = "operators"
NAMESPACE = "webapps"
PEERING_LIFETIME = 5  # seconds before a silent replica is taken for dead
WEBAPPS = f"/apis/demo.example.com/v1/namespaces/{NAMESPACE}/webapps"
PEERING = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfpeerings/webapp-operator"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/auto.webapps.demo.example.com"

pytest.importorskip("kopf", reason="kopf is a dev dependency (pip install -e .[dev])")


@dataclass
class Operator(ChildProcess):
    """One replica: ``kopf run`` with the space's kubeconfig, probed through kopf's liveness endpoint."""

    name: str
    priority: int
    env: dict[str, str]
    log_path: Path
    liveness_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def label(self) -> str:
        return f"operator replica {self.name}"

    def start(self) -> None:
        self.launch([str(BIN / "kopf"), "run", str(EXAMPLE / "operator.py"), "--namespace", NAMESPACE,
                     "--peering", "webapp-operator", "--priority", str(self.priority), "--verbose",
                     "--liveness", f"http://127.0.0.1:{self.liveness_port}/healthz"], env=self.env)
        self.wait_ready(self._alive, timeout=60, retry_on=(httpx.TransportError,))

    def _alive(self) -> bool:
        return httpx.get(f"http://127.0.0.1:{self.liveness_port}/healthz", timeout=2).status_code == 200


@dataclass
class Fleet:
    world: World
    operators: dict[str, Operator]

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.world.hub.kubectl(*args, space=SPACE, input=input, check=check)

    def get(self, path: str) -> dict[str, Any] | None:
        return self.world.hub_get(SPACE, path)

    def webapp(self, name: str, replicas: int = 2, workers: int = 1) -> str:
        return yaml.safe_dump({"apiVersion": "demo.example.com/v1", "kind": "WebApp",
                               "metadata": {"name": name, "namespace": NAMESPACE},
                               "spec": {"image": "library/httpd:2.4", "replicas": replicas, "workers": workers}})


def webhook_certificate(base: Path) -> tuple[Path, Path]:
    """The example README's self-signed certificate for the webhook, made with its openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed (Debian: apt-get install openssl)")
    cert, key = base / "webhook.crt", base / "webhook.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    base = tmp_path_factory.mktemp("kopf")
    world = World(base, clusters=2)
    world.sim.extra_args = ("--hub", world.hub.base_url, "--hub-kubeconfig", str(world.hub.kubeconfig),
                            "--with-syncers", "--cluster-label", "env=dev", "--ready-delay", "1", "--processes", "1")
    operators: dict[str, Operator] = {}
    try:
        world.start()
        world.hub.create_space(SPACE)
        fleet = Fleet(world, operators)
        fleet.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
        fleet.kubectl("wait", "--for=condition=Established", "crd/webapps.demo.example.com",
                      "crd/kopfpeerings.kopf.dev")
        fleet.kubectl("apply", "-f", str(EXAMPLE / "peering.yaml"), "-f", str(EXAMPLE / "rbac.yaml"),
                      "-f", str(EXAMPLE / "placement.yaml"))
        # The operator's kubeconfig: the space's, with its ServiceAccount's token instead of the admin's.
        kubeconfig = base / "operators.kubeconfig"
        kubeconfig.write_text(world.hub.spacehub("space", "kubeconfig", SPACE).stdout)
        token = fleet.kubectl("create", "token", "webapp-operator", "-n", NAMESPACE, "--duration", "2h").stdout
        fleet.kubectl("--kubeconfig", str(kubeconfig), "config", "set-credentials", f"root:{SPACE}",
                      f"--token={token.strip()}")

        # Both replicas serve the webhook at one address with one certificate, as replicas behind a Service would.
        cert, key = webhook_certificate(base)
        env = {k: v for k, v in world.hub.env.items() if "proxy" not in k.lower()} | {
            "KUBECONFIG": str(kubeconfig), "WEBAPP_WEBHOOK_LISTEN": f"127.0.0.1:{free_port()}",
            "WEBAPP_WEBHOOK_CERT": str(cert), "WEBAPP_WEBHOOK_KEY": str(key),
            "WEBAPP_PEERING_LIFETIME": str(PEERING_LIFETIME)}
        # The second replica starts once the first has a live entry in the peering, so it waits from its start.
        for name, priority in (("first", 100), ("second", 50)):
            operators[name] = Operator(name, priority, env, base / f"operator-{name}.log")
            operators[name].start()
            wait_for(lambda: len((fleet.get(PEERING) or {}).get("status") or {}) == len(operators), timeout=30,
                     message=f"replica {name} in the peering")
        # kopf registers its webhooks itself, with the URL it listens at and the CA bundle.
        wait_for(lambda: ((fleet.get(WEBHOOKS) or {}).get("webhooks") or [{}])[0].get("clientConfig"),
                 timeout=60, message="kopf's webhook configuration")
        yield fleet
    finally:
        for operator in operators.values():
            operator.stop()
        world.close()


def test_kopf_registers_its_webhooks_and_the_hub_calls_them(fleet: Fleet) -> None:
    refused = fleet.kubectl("create", "-f", "-", input=fleet.webapp("huge", replicas=11), check=False)
    assert refused.returncode != 0
    assert "denied the request: at most 10 replicas, asked for 11" in refused.stderr, refused.stderr

    created = yaml.safe_load(fleet.kubectl("create", "-f", "-", "-o", "yaml", input=fleet.webapp("tiny")).stdout)
    assert created["metadata"]["labels"]["demo.example.com/managed-by"] == "webapp-operator"
    hooks = (fleet.get(WEBHOOKS) or {})["webhooks"]
    assert hooks[0]["clientConfig"]["url"].startswith(fleet.operators["first"].env["WEBAPP_WEBHOOK_LISTEN"]
                                                      .join(("https://", "/")))


def test_the_operator_creates_children_that_run_in_both_clusters_and_reports_them(fleet: Fleet) -> None:
    fleet.kubectl("create", "-f", "-", input=fleet.webapp("shop"))
    deployment = wait_for(lambda: fleet.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/shop"),
                          timeout=30, message="the operator's Deployment in the space")
    assert deployment["metadata"]["ownerReferences"][0]["kind"] == "WebApp"
    worker = wait_for(lambda: fleet.get(f"/api/v1/namespaces/{NAMESPACE}/pods/shop-worker-0"),
                      timeout=30, message="the operator's worker Pod in the space")
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "WebApp"
    for cluster in ("wec1", "wec2"):
        fleet.world.wait_present(cluster, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/shop", timeout=60,
                                 check=lambda d: (d.get("status") or {}).get("readyReplicas") == 2)
        fleet.world.wait_present(cluster, f"/api/v1/namespaces/{NAMESPACE}/pods/shop-worker-0", timeout=60,
                                 check=lambda p: (p.get("status") or {}).get("phase") == "Running")

    def reported() -> dict[str, Any] | None:
        status = (fleet.get(f"{WEBAPPS}/shop") or {}).get("status") or {}
        return status if status.get("phase") == "Running" else None

    status = wait_for(reported, timeout=60, message="the WebApp reported Running")
    assert status["readyReplicas"] == 2 and status["replicas"] == 2
    # The worker's status came home from both clusters, and the operator saw it Running.
    assert status["workers"] == {"shop-worker-0": "Running"} and status["workersRunning"] == "1/1"
    events = yaml.safe_load(fleet.kubectl("get", "events", "-n", NAMESPACE, "-o", "yaml",
                                          "--field-selector", "involvedObject.name=shop").stdout)["items"]
    assert "Created" in {e["reason"] for e in events}


def test_scaling_a_webapp_scales_its_deployment_everywhere_and_deleting_it_deletes_its_children(
        fleet: Fleet) -> None:
    fleet.kubectl("create", "-f", "-", input=fleet.webapp("cart", replicas=1))
    wait_for(lambda: ((fleet.get(f"{WEBAPPS}/cart") or {}).get("status") or {}).get("phase") == "Running",
             timeout=60, message="cart Running")
    fleet.kubectl("patch", "webapp", "cart", "-n", NAMESPACE, "--type", "merge", "-p", '{"spec": {"replicas": 3}}')
    for cluster in ("wec1", "wec2"):
        fleet.world.wait_present(cluster, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/cart", timeout=60,
                                 check=lambda d: (d.get("status") or {}).get("readyReplicas") == 3)
    wait_for(lambda: ((fleet.get(f"{WEBAPPS}/cart") or {}).get("status") or {}).get("readyReplicas") == 3,
             timeout=60, message="3 ready replicas reported on the WebApp")

    fleet.kubectl("delete", "webapp", "cart", "-n", NAMESPACE)
    for cluster in ("wec1", "wec2"):  # garbage collection in the space, then the placement takes them back
        fleet.world.wait_absent(cluster, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/cart", timeout=60)
        fleet.world.wait_absent(cluster, f"/api/v1/namespaces/{NAMESPACE}/pods/cart-worker-0", timeout=60)


def test_killing_the_working_replica_hands_the_work_to_the_other(fleet: Fleet) -> None:
    first, second = fleet.operators["first"], fleet.operators["second"]
    # The second replica has waited from its start: the first's priority is higher.
    assert "Pausing the watch-stream for webapps.v1.demo.example.com in 'webapps' (blockers: webapp-operator" \
        in second.log()
    assert "Resuming operations" not in second.log() and "Handler 'create_children'" not in second.log()
    first.stop(signal.SIGKILL)  # no goodbye: its entry in the peering just stops being renewed
    fleet.kubectl("create", "-f", "-", input=fleet.webapp("after", workers=0))
    wait_for(lambda: "[webapps/after] Handler 'create_children' succeeded" in second.log(),
             timeout=PEERING_LIFETIME + 30, message="the second replica handling the new WebApp")
    assert fleet.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/after") is not None
    assert "Resuming operations after the pause" in second.log()
    # The webhook is still served: the second replica listens at the same address.
    refused = fleet.kubectl("create", "-f", "-", input=fleet.webapp("huge", replicas=11), check=False)
    assert "denied the request: at most 10 replicas" in refused.stderr, refused.stderr


def test_the_example_needs_no_knowledge_of_spaces() -> None:
    source = (EXAMPLE / "operator.py").read_text()
    assert "spacehub" not in source.lower() and "/clusters/" not in source
