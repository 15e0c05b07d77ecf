"""Everyday kubectl against a space, with kubectl's default flags (strict validation)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import textwrap
from pathlib import Path

import yaml

from tests.harness import Hub, kubectl_yaml

APP = textwrap.dedent("""\
    apiVersion: v1
    kind: Namespace
    metadata:
      name: shop
      labels: {team: web}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      namespace: shop
      labels: {app: web}
    spec:
      replicas: 2
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          containers:
          - name: web
            image: nginx:1.27
            ports:
            - containerPort: 80
            env:
            - name: MODE
              value: production
            - name: OLD_FLAG
              value: "1"
          - name: sidecar
            image: busybox:1.36
            command: ["sleep", "infinity"]
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: web
      namespace: shop
    spec:
      selector: {app: web}
      ports:
      - port: 80
        targetPort: 80
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-config
      namespace: shop
    data:
      greeting: hello
    """)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _create_configmap(hub: Hub, space: str, name: str, data: dict[str, str]) -> None:
    # `kubectl create configmap` sends protobuf bodies (kubectl >= 1.32); this file covers the JSON paths.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
          "data": data}
    hub.kubectl("create", "-f", "-", space=space, input=json.dumps(cm))


def _containers(hub: Hub, space: str) -> dict[str, dict]:
    live = kubectl_yaml(hub.kubectl("get", "deployment", "web", "-n", "shop", "-o", "yaml", space=space))
    return {c["name"]: c for c in live["spec"]["template"]["spec"]["containers"]}


def test_apply_is_idempotent_and_an_edited_file_changes_exactly_what_changed(hub: Hub, space: str,
                                                                            tmp_path: Path) -> None:
    manifest = _write(tmp_path, "app.yaml", APP)
    first = hub.kubectl("apply", "-f", str(manifest), space=space)
    assert "namespace/shop created" in first.stdout
    assert "deployment.apps/web created" in first.stdout
    assert "service/web created" in first.stdout
    assert "configmap/web-config created" in first.stdout

    again = hub.kubectl("apply", "-f", str(manifest), space=space)
    assert again.stdout.count("unchanged") == 4, again.stdout

    before = _containers(hub, space)
    old_flag = '        - name: OLD_FLAG\n          value: "1"\n'
    assert old_flag in APP
    edited = APP.replace("nginx:1.27", "nginx:1.28").replace(
        old_flag, "        - name: LOG_LEVEL\n          value: debug\n")
    diff = hub.kubectl("diff", "-f", str(_write(tmp_path, "edited.yaml", edited)), space=space, check=False)
    assert diff.returncode == 1, diff.stderr  # 1 = differences found
    assert "nginx:1.28" in diff.stdout and "OLD_FLAG" in diff.stdout

    out = hub.kubectl("apply", "-f", str(tmp_path / "edited.yaml"), space=space)
    assert "deployment.apps/web configured" in out.stdout
    assert "service/web unchanged" in out.stdout
    after = _containers(hub, space)
    assert after["web"]["image"] == "nginx:1.28"
    assert after["web"]["env"] == [{"name": "MODE", "value": "production"},
                                   {"name": "LOG_LEVEL", "value": "debug"}]
    assert after["web"]["ports"] == before["web"]["ports"]
    assert after["sidecar"] == before["sidecar"]
    assert hub.kubectl("diff", "-f", str(tmp_path / "edited.yaml"), space=space).returncode == 0


def test_get_output_formats(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("apply", "-f", str(_write(tmp_path, "app.yaml", APP)), space=space)
    wide = hub.kubectl("get", "deployments", "-n", "shop", "-o", "wide", space=space).stdout
    header = wide.splitlines()[0].split()
    assert header[:5] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert "IMAGES" in header and "SELECTOR" in header
    assert "nginx:1.27,busybox:1.36" in wide
    svc = hub.kubectl("get", "svc", "web", "-n", "shop", space=space).stdout
    assert svc.splitlines()[0].split()[:4] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP"]
    assert "80/TCP" in svc
    as_yaml = kubectl_yaml(hub.kubectl("get", "cm", "web-config", "-n", "shop", "-o", "yaml", space=space))
    assert as_yaml["data"] == {"greeting": "hello"}
    assert as_yaml["metadata"]["uid"] and as_yaml["metadata"]["resourceVersion"]
    jp = hub.kubectl("get", "deploy", "web", "-n", "shop", "-o",
                     "jsonpath={.spec.template.spec.containers[*].name}", space=space)
    assert jp.stdout == "web sidecar"
    every = hub.kubectl("get", "configmaps", "-A", space=space).stdout
    assert every.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert "shop" in every and "web-config" in every
    everything = hub.kubectl("get", "all", "-n", "shop", space=space).stdout
    assert "deployment.apps/web" in everything and "service/web" in everything


def test_get_watch_sees_a_later_change(hub: Hub, space: str) -> None:
    hub.kubectl("create", "-f", "-", space=space, input=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched", "namespace": "default"},
         "data": {"v": "1"}}))
    cmd = [str(Path(hub.env["PATH"].split(os.pathsep)[0]) / "kubectl"), "--server",
           f"{hub.base_url}/clusters/{space}", "get", "configmap", "watched", "-w", "-o",
           "jsonpath={.metadata.name}={.data.v}{\"\\n\"}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hub.env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "watched=1"
        hub.kubectl("patch", "configmap", "watched", "--type", "merge", "-p", '{"data":{"v":"2"}}', space=space)
        assert proc.stdout.readline().strip() == "watched=2"
    finally:
        proc.kill()
        proc.wait()


def test_label_annotate_and_all_patch_types(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("apply", "-f", str(_write(tmp_path, "app.yaml", APP)), space=space)
    hub.kubectl("label", "deployment", "web", "-n", "shop", "tier=frontend", space=space)
    hub.kubectl("annotate", "deployment", "web", "-n", "shop", "owner=alice", space=space)
    selected = hub.kubectl("get", "deploy", "-n", "shop", "-l", "tier=frontend", "-o", "name", space=space)
    assert selected.stdout.strip() == "deployment.apps/web"
    assert hub.kubectl("get", "deploy", "-n", "shop", "-l", "tier in (backend)", "-o", "name",
                       space=space).stdout.strip() == ""

    hub.kubectl("patch", "deployment", "web", "-n", "shop", "--type", "json",
                "-p", '[{"op":"replace","path":"/spec/replicas","value":3}]', space=space)
    hub.kubectl("patch", "deployment", "web", "-n", "shop", "--type", "merge",
                "-p", '{"metadata":{"annotations":{"owner":null}}}', space=space)
    hub.kubectl("patch", "deployment", "web", "-n", "shop", "-p",
                '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}',
                space=space)
    live = kubectl_yaml(hub.kubectl("get", "deploy", "web", "-n", "shop", "-o", "yaml", space=space))
    assert live["spec"]["replicas"] == 3
    assert "owner" not in (live["metadata"].get("annotations") or {})
    assert live["metadata"]["labels"]["tier"] == "frontend"
    images = {c["name"]: c["image"] for c in live["spec"]["template"]["spec"]["containers"]}
    assert images == {"web": "nginx:1.27", "sidecar": "busybox:1.37"}  # strategic: merged by name
    assert live["metadata"]["generation"] == 3  # two spec changes after creation


def test_edit_with_an_editor_script(hub: Hub, space: str, tmp_path: Path) -> None:
    _create_configmap(hub, space, "editable", {"k": "v1"})
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/k: v1/k: v2/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    env = dict(hub.env, KUBE_EDITOR=str(editor), EDITOR=str(editor))
    hub.kubectl("edit", "configmap", "editable", "-n", "default", space=space, env=env)
    out = hub.kubectl("get", "cm", "editable", "-n", "default", "-o", "jsonpath={.data.k}", space=space)
    assert out.stdout == "v2"


def test_describe_lists_the_objects_events(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("apply", "-f", str(_write(tmp_path, "app.yaml", APP)), space=space)
    uid = hub.kubectl("get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.metadata.uid}", space=space).stdout
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": "shop"},
             "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "shop", "uid": uid,
                                "apiVersion": "apps/v1"},
             "reason": "ScalingReplicaSet", "message": "Scaled up replica set web-1 to 2", "type": "Normal",
             "source": {"component": "deployment-controller"}, "count": 1,
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    other = json.loads(json.dumps(event))
    other["metadata"]["name"] = "other.1"
    other["involvedObject"].update(name="other", uid="0000")
    other["message"] = "about something else"
    hub.kubectl("create", "-f", "-", space=space, input=yaml.safe_dump_all([event, other]))
    described = hub.kubectl("describe", "deployment", "web", "-n", "shop", space=space).stdout
    assert "Scaled up replica set web-1 to 2" in described
    assert "about something else" not in described
    assert "nginx:1.27" in described


def test_delete_waits_and_wait_conditions(hub: Hub, space: str) -> None:
    _create_configmap(hub, space, "doomed", {"state": "ready"})
    hub.kubectl("wait", "configmap/doomed", "-n", "default", "--for=jsonpath={.data.state}=ready",
                "--timeout=20s", space=space)
    waiter = subprocess.Popen([str(Path(hub.env["PATH"].split(os.pathsep)[0]) / "kubectl"),
                               "--server", f"{hub.base_url}/clusters/{space}", "wait", "configmap/doomed",
                               "-n", "default", "--for=delete", "--timeout=30s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hub.env)
    out = hub.kubectl("delete", "configmap", "doomed", "-n", "default", space=space)
    assert 'configmap "doomed" deleted' in out.stdout
    _stdout, stderr = waiter.communicate(timeout=40)
    assert waiter.returncode == 0, stderr
    assert hub.kubectl("get", "cm", "doomed", "-n", "default", space=space, check=False).returncode == 1


def test_discovery_explain_and_server_dry_run(hub: Hub, space: str, tmp_path: Path) -> None:
    resources = hub.kubectl("api-resources", space=space).stdout
    for expected in ("deployments", "configmaps", "customresourcedefinitions", "horizontalpodautoscalers"):
        assert expected in resources
    # Spaces run no pods: the pods they list are their clusters' (README "Debug from the hub"), read-only.
    pods = next(line.split() for line in resources.splitlines() if line.startswith("pods "))
    assert pods[-1] == "Pod"
    explained = hub.kubectl("explain", "deployment.spec.template", space=space).stdout
    assert "PodTemplateSpec" in explained and "spec" in explained
    # As on a real cluster, a dry-run Namespace does not exist for the objects after it, so the
    # dry run uses the existing default namespace.
    in_default = APP.split("---\n", 1)[1].replace("namespace: shop", "namespace: default")
    dry = hub.kubectl("apply", "-f", str(_write(tmp_path, "app.yaml", in_default)), "--dry-run=server",
                      space=space)
    assert dry.stdout.count("(server dry run)") == 3, dry.stdout
    assert hub.kubectl("get", "deploy,svc,cm", "-n", "default", "-o", "name", space=space).stdout == \
        "configmap/kube-root-ca.crt\n"  # every namespace's, nothing of the dry run


def test_strict_validation_rejects_unknown_fields(hub: Hub, space: str) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo", "namespace": "default"},
           "dataa": {"k": "v"}}
    out = hub.kubectl("create", "-f", "-", space=space, input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert 'unknown field "dataa"' in out.stderr


def test_chunked_list_over_1200_configmaps(hub: Hub, space: str) -> None:
    with hub.client() as c:
        c.post(f"/clusters/{space}/api/v1/namespaces", json={"metadata": {"name": "many"}}).raise_for_status()
        for i in range(1200):
            r = c.post(f"/clusters/{space}/api/v1/namespaces/many/configmaps",
                       json={"metadata": {"name": f"cm-{i:04d}"}, "data": {"i": str(i)}})
            assert r.status_code == 201, r.text
    names = hub.kubectl("get", "configmaps", "-n", "many", "--chunk-size=100", "-o", "name", space=space)
    listed = [name for name in names.stdout.split() if name != "configmap/kube-root-ca.crt"]  # the namespace's
    assert len(listed) == 1200 and len(set(listed)) == 1200
    v = hub.kubectl("get", "configmaps", "-n", "many", "--chunk-size=100", "-v=6", space=space)
    assert v.stderr.count("limit=100") >= 12


def test_deleting_a_namespace_removes_its_contents(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("apply", "-f", str(_write(tmp_path, "app.yaml", APP)), space=space)
    hub.kubectl("delete", "namespace", "shop", "--timeout=60s", space=space)
    assert hub.kubectl("get", "ns", "shop", space=space, check=False).returncode == 1
    assert hub.kubectl("get", "all,cm", "-n", "shop", "-o", "name", space=space).stdout.strip() == ""
    late = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "shop"}}
    out = hub.kubectl("create", "-f", "-", space=space, input=json.dumps(late), check=False)
    assert out.returncode != 0 and "not found" in out.stderr
