"""``inventory.syncer_manifest``: the objects that run a cluster's syncer in that cluster, and their YAML."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest
import yaml

from inventory.syncer_manifest import default_image, render, syncer_manifest
from spacehub.main import build_parser

BOOTSTRAP = {"apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap", "hub": "https://hub.example:6443",
             "inventorySpace": "inventory", "syncTarget": "florin", "token": "st-secret-token",
             "certificateAuthorityData": "LS0tLS1CRUdJTi0tLS0tCg=="}


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in objects}


def test_objects_come_in_apply_order_in_the_syncer_namespace() -> None:
    objects = syncer_manifest(BOOTSTRAP, namespace="edge-sync", image="registry.test/syncer:1")
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                            "Secret", "Deployment"]
    kinds = by_kind(objects)
    assert kinds["Namespace"]["metadata"]["name"] == "edge-sync"
    for kind in ("ServiceAccount", "Secret", "Deployment"):
        assert kinds[kind]["metadata"]["namespace"] == "edge-sync", kind
    for kind in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        assert "namespace" not in kinds[kind]["metadata"], kind


def test_the_secret_holds_exactly_the_bootstrap() -> None:
    secret = by_kind(syncer_manifest(BOOTSTRAP, namespace="spacehub-syncer", image="i"))["Secret"]
    assert (secret["metadata"]["name"], secret["type"]) == ("spacehub-syncer-bootstrap", "Opaque")
    assert list(secret["stringData"]) == ["bootstrap.yaml"] and "data" not in secret
    assert yaml.safe_load(secret["stringData"]["bootstrap.yaml"]) == BOOTSTRAP


def test_the_cluster_role_allows_every_kind_and_is_bound_to_the_service_account() -> None:
    kinds = by_kind(syncer_manifest(BOOTSTRAP, namespace="ns1", image="i"))
    role, binding = kinds["ClusterRole"], kinds["ClusterRoleBinding"]
    assert role["metadata"]["name"] == "spacehub-syncer-florin"
    assert role["rules"] == [{"apiGroups": ["*"], "resources": ["*"],
                              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "spacehub-syncer-florin"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "spacehub-syncer", "namespace": "ns1"}]
    assert kinds["ServiceAccount"]["metadata"]["name"] == "spacehub-syncer"


def test_the_deployment_runs_one_syncer_with_the_mounted_bootstrap() -> None:
    deployment = by_kind(syncer_manifest(BOOTSTRAP, namespace="ns1", image="registry.test/syncer:1"))["Deployment"]
    spec = deployment["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})
    labels = {"app.kubernetes.io/name": "spacehub-syncer", "app.kubernetes.io/instance": "florin"}
    assert deployment["metadata"]["labels"] == labels
    assert spec["selector"] == {"matchLabels": labels} and spec["template"]["metadata"]["labels"] == labels
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "spacehub-syncer"
    [container] = pod["containers"]
    assert (container["name"], container["image"], container["command"]) == ("syncer", "registry.test/syncer:1",
                                                                              ["spacehub"])
    assert container["args"] == ["syncer", "run", "--bootstrap", "/etc/spacehub-syncer/bootstrap.yaml",
                                 "--state", "/var/lib/spacehub-syncer/state.db"]
    assert not any("kubeconfig" in arg for arg in container["args"])  # in-cluster config
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["bootstrap"] == {"name": "bootstrap", "mountPath": "/etc/spacehub-syncer", "readOnly": True}
    assert volumes["bootstrap"]["secret"] == {"secretName": "spacehub-syncer-bootstrap"}
    assert mounts["state"]["mountPath"] == "/var/lib/spacehub-syncer" and not mounts["state"].get("readOnly")
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    assert container["resources"] == {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
    assert container["securityContext"] == {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                                            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_render_is_a_yaml_stream_that_round_trips_in_order() -> None:
    objects = syncer_manifest(BOOTSTRAP, namespace="spacehub-syncer", image="i")
    text = render(objects)
    assert text.startswith("apiVersion: v1\nkind: Namespace\n")  # fields in build order, not sorted
    assert list(yaml.safe_load_all(text)) == objects
    assert "bootstrap.yaml: |\n" in text  # the bootstrap reads as it does in its own file


@pytest.mark.parametrize("namespace", ["Spacehub", "a.b", "-x", "", "x" * 64])
def test_a_namespace_that_is_not_a_dns1123_label_is_refused(namespace: str) -> None:
    with pytest.raises(ValueError, match="invalid syncer namespace"):
        syncer_manifest(BOOTSTRAP, namespace=namespace, image="i")


def test_the_default_image_is_this_spacehub_version() -> None:
    assert default_image() == f"ghcr.io/spacehub/spacehub:{importlib.metadata.version('spacehub')}"


def test_register_flags() -> None:
    args = build_parser().parse_args(["cluster", "register", "florin"])
    assert (args.output, args.bootstrap_out, args.syncer_namespace, args.syncer_image) == (
        "bootstrap", None, "spacehub-syncer", None)
    args = build_parser().parse_args(["cluster", "register", "florin", "-o", "manifest", "--out", "m.yaml",
                                      "--syncer-namespace", "sync", "--syncer-image", "img:1"])
    assert (args.output, str(args.bootstrap_out), args.syncer_namespace, args.syncer_image) == (
        "manifest", "m.yaml", "sync", "img:1")
    assert str(build_parser().parse_args(["cluster", "register", "f", "--bootstrap-out", "b"]).bootstrap_out) == "b"
