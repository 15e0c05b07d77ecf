"""Server-side apply through real kubectl: ownership, conflicts, force, removal, migration from client-side."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.harness import Hub, kubectl_yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"


def deployment(replicas: int, env: list[dict[str, str]] | None = None, labels: dict[str, str] | None = None) -> str:
    container = {"name": "app", "image": "nginx:1.27"}
    if env is not None:
        container["env"] = env
    meta = {"name": "ssa", "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "ssa"}},
                                    "template": {"metadata": {"labels": {"app": "ssa"}},
                                                 "spec": {"containers": [container]}}}})


def live(hub: Hub, space: str, *extra: str) -> dict:
    return kubectl_yaml(hub.kubectl("get", "deploy", "ssa", "-n", "default", "-o", "yaml", *extra, space=space))


def test_conflicts_name_the_other_manager_and_force_takes_ownership(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "--server-side", "-f", "-", space=space, input=deployment(2))
    out = hub.kubectl("apply", "--server-side", "--field-manager=autoscaler", "-f", "-", space=space,
                      input=deployment(5), check=False)
    assert out.returncode != 0
    assert 'conflict with "kubectl"' in out.stderr and ".spec.replicas" in out.stderr
    assert live(hub, space)["spec"]["replicas"] == 2
    hub.kubectl("apply", "--server-side", "--field-manager=autoscaler", "--force-conflicts", "-f", "-",
                space=space, input=deployment(5))
    obj = live(hub, space, "--show-managed-fields")
    assert obj["spec"]["replicas"] == 5
    entries = {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in entries and ("autoscaler", "Apply") in entries
    assert "f:replicas" in entries[("autoscaler", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entries[("kubectl", "Apply")]["fieldsV1"]["f:spec"]
    for entry in entries.values():
        assert entry["fieldsType"] == "FieldsV1" and entry["apiVersion"] == "apps/v1" and entry["time"]


def test_fields_dropped_from_the_applied_file_are_removed(hub: Hub, space: str) -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    hub.kubectl("apply", "--server-side", "-f", "-", space=space,
                input=deployment(1, env=env, labels={"team": "x", "tier": "web"}))
    hub.kubectl("apply", "--server-side", "-f", "-", space=space,
                input=deployment(1, env=env[:1], labels={"team": "x"}))
    obj = live(hub, space)
    assert obj["metadata"]["labels"] == {"team": "x"}
    assert obj["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_client_side_apply_migrates_to_server_side(hub: Hub, space: str, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(deployment(1, labels={"team": "x", "old": "yes"}))
    hub.kubectl("apply", "-f", str(path), space=space)
    path.write_text(deployment(2, labels={"team": "x"}))
    hub.kubectl("apply", "--server-side", "-f", str(path), space=space)
    obj = live(hub, space, "--show-managed-fields")
    assert obj["spec"]["replicas"] == 2
    assert obj["metadata"]["labels"] == {"team": "x"}
    managers = {e["manager"] for e in obj["metadata"]["managedFields"]}
    assert "kubectl-client-side-apply" not in managers and "kubectl" in managers


def test_server_side_apply_on_a_custom_resource(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "--server-side", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", "--timeout=10s",
                space=space)
    w = {"apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "ssa", "namespace": "default"},
         "spec": {"image": "r/w@sha256:" + "b" * 64, "owner": "team-b",
                  "ports": [{"name": "http", "port": 80}, {"name": "grpc", "port": 9000}], "tags": ["a"]}}
    hub.kubectl("apply", "--server-side", "-f", "-", space=space, input=yaml.safe_dump(w))
    other = {"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
             "metadata": {"name": "ssa", "namespace": "default"},
             "spec": {"ports": [{"name": "metrics", "port": 9090}], "tags": ["b"]}}
    hub.kubectl("apply", "--server-side", "--field-manager=sidecar-injector", "-f", "-", space=space,
                input=yaml.safe_dump(other))
    obj = kubectl_yaml(hub.kubectl("get", "widget", "ssa", "-n", "default", "-o", "yaml", space=space))
    assert [p["name"] for p in obj["spec"]["ports"]] == ["http", "grpc", "metrics"]
    assert sorted(obj["spec"]["tags"]) == ["a", "b"]
    w["spec"]["ports"] = [{"name": "http", "port": 80}]
    hub.kubectl("apply", "--server-side", "-f", "-", space=space, input=yaml.safe_dump(w))
    obj = kubectl_yaml(hub.kubectl("get", "widget", "ssa", "-n", "default", "-o", "yaml", space=space))
    assert [p["name"] for p in obj["spec"]["ports"]] == ["http", "metrics"]
