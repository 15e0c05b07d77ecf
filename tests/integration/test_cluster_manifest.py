"""``spacehub cluster register NAME -o manifest`` against a real hub, applied with real kubectl to a space
(a Kubernetes API standing in for the workload cluster)."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.harness import Hub, kubectl_yaml
from tests.integration.test_placement_api import cluster_names


def heartbeat(hub: Hub, name: str, token: str) -> httpx.Response:
    with httpx.Client(verify=hub.ssl_context(), timeout=30) as c:
        return c.post(f"{hub.base_url}/syncer/v1/targets/{name}/heartbeat", json={},
                      headers={"Authorization": f"Bearer {token}"})


def test_the_manifest_applies_with_kubectl_and_carries_a_working_credential(hub: Hub) -> None:
    name, space = "manifest-florin", "manifest-florin-cluster"
    hub.create_space(space)
    try:
        registered = hub.spacehub("cluster", "register", name, "--label", "env=edge", "-o", "manifest",
                                  "--syncer-image", "registry.test/spacehub:dev")
        assert f'cluster "{name}" registered' in registered.stderr
        documents: list[dict[str, Any]] = list(yaml.safe_load_all(registered.stdout))
        assert [d["kind"] for d in documents] == ["Namespace", "ServiceAccount", "ClusterRole",
                                                  "ClusterRoleBinding", "Secret", "Deployment"]

        applied = hub.kubectl("apply", "-f", "-", space=space, input=registered.stdout)
        assert "deployment.apps/spacehub-syncer created" in applied.stdout, applied.stdout

        deployment = kubectl_yaml(hub.kubectl("get", "deployment", "spacehub-syncer", "-n", "spacehub-syncer",
                                              "-o", "yaml", space=space))
        assert deployment["spec"]["strategy"]["type"] == "Recreate" and deployment["spec"]["replicas"] == 1
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.test/spacehub:dev"
        assert container["args"][:4] == ["syncer", "run", "--bootstrap", "/etc/spacehub-syncer/bootstrap.yaml"]
        binding = kubectl_yaml(hub.kubectl("get", "clusterrolebinding", f"spacehub-syncer-{name}", "-o", "yaml",
                                           space=space))
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "spacehub-syncer",
                                        "namespace": "spacehub-syncer"}]
        hub.kubectl("get", "serviceaccount", "spacehub-syncer", "-n", "spacehub-syncer", space=space)

        secret = kubectl_yaml(hub.kubectl("get", "secret", "spacehub-syncer-bootstrap", "-n", "spacehub-syncer",
                                          "-o", "yaml", space=space))
        assert secret["type"] == "Opaque" and list(secret["data"]) == ["bootstrap.yaml"]
        bootstrap = yaml.safe_load(base64.b64decode(secret["data"]["bootstrap.yaml"]))
        assert (bootstrap["kind"], bootstrap["syncTarget"], bootstrap["hub"]) == ("SyncerBootstrap", name,
                                                                                  hub.base_url)

        assert heartbeat(hub, name, "not-the-token").status_code in (401, 403)
        beat = heartbeat(hub, name, bootstrap["token"])
        assert beat.status_code == 200, beat.text
    finally:
        hub.spacehub("cluster", "delete", name, check=False)
    # The credential in the applied Secret was this cluster's: deleting the cluster revokes it.
    assert heartbeat(hub, name, bootstrap["token"]).status_code in (401, 403, 404)


def test_the_manifest_goes_to_a_private_file_and_honours_the_namespace(hub: Hub, tmp_path: Path) -> None:
    name, out = "manifest-guilder", tmp_path / "syncer.yaml"
    try:
        written = hub.spacehub("cluster", "register", name, "-o", "manifest", "--out", str(out),
                               "--syncer-namespace", "edge-sync")
        assert f"syncer manifest written to {out}" in written.stdout
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        documents = list(yaml.safe_load_all(out.read_text()))
        assert documents[0]["metadata"]["name"] == "edge-sync"
        assert {d["metadata"].get("namespace") for d in documents[1:] if "Cluster" not in d["kind"]} == {"edge-sync"}
        assert yaml.safe_load(documents[4]["stringData"]["bootstrap.yaml"])["syncTarget"] == name
    finally:
        hub.spacehub("cluster", "delete", name, check=False)


def test_an_invalid_syncer_namespace_is_refused_before_registering(hub: Hub) -> None:
    refused = hub.spacehub("cluster", "register", "manifest-bad-ns", "-o", "manifest",
                           "--syncer-namespace", "Not_A.Label", check=False)
    assert refused.returncode != 0
    assert "--syncer-namespace" in refused.stderr and "Not_A.Label" in refused.stderr, refused.stderr
    assert refused.stdout == ""
    assert "manifest-bad-ns" not in cluster_names(hub)
