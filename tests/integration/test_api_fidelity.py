"""Kube API fidelity, round 2: what clients nobody here wrote expect of kube-apiserver, through them.

Boolean query parameters, patches of the scale subresource, ``kubectl auth whoami|can-i``, what an
immediate delete answers, ``remainingItemCount``, admission of no-op updates, deleting a CRD that a
policy guards, and the annotation limit of client-side apply.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import kubernetes_asyncio.client as aio_client
import kubernetes_asyncio.watch as aio_watch
import pytest
import yaml
from kubernetes import client as k8s
from lightkube import Client as LightClient
from lightkube import KubeConfig
from lightkube.models.autoscaling_v1 import ScaleSpec
from lightkube.resources.apps_v1 import Deployment as LightDeployment

from tests.harness import Hub, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
DIGEST = "sha256:" + "a" * 64


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels},
            "data": {"k": "v"}}


def create(c: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post(path, json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def core_api(hub: Hub, space: str) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(hub.api_client(space))


# --- 3. boolean query parameters ----------------------------------------------------------------------

@pytest.mark.parametrize(("value", "watches"), [
    ("true", True), ("True", True), ("TRUE", True), ("1", True), ("t", True), ("", True),
    ("false", False), ("False", False), ("FALSE", False), ("0", False),
])
def test_watch_is_read_like_kube_apiserver_reads_booleans(hub: Hub, space: str, value: str, watches: bool) -> None:
    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    name = f"v{value.encode().hex()}x"  # the parametrized cases share their space
    with hub.client() as c:
        create(c, path, configmap(name))
        r = c.get(path, params={"watch": value, "timeoutSeconds": "1", "fieldSelector": f"metadata.name={name}"})
    assert r.status_code == 200, r.text
    first = json.loads(r.text.splitlines()[0])
    if watches:
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", name)
    else:
        assert first["kind"] == "ConfigMapList"


def test_kubernetes_asyncio_watch_sees_a_change(hub: Hub, space: str) -> None:
    async def run() -> list[tuple[str, str]]:
        cfg = aio_client.Configuration()
        cfg.host = f"{hub.base_url}/clusters/{space}"
        cfg.ssl_ca_cert = str(hub.ca_file)
        cfg.api_key = {"BearerToken": hub.token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        async with aio_client.ApiClient(cfg) as api_client:
            api = aio_client.CoreV1Api(api_client)
            listed = await api.list_namespaced_config_map("default")
            await api.create_namespaced_config_map("default", {"metadata": {"name": "aio"}, "data": {"k": "v"}})
            seen: list[tuple[str, str]] = []
            async with aio_watch.Watch() as w:
                async for event in w.stream(api.list_namespaced_config_map, "default",
                                            resource_version=listed.metadata.resource_version, timeout_seconds=10):
                    seen.append((event["type"], event["object"].metadata.name))
                    break
            return seen

    assert asyncio.run(run()) == [("ADDED", "aio")]


# --- 4. every patch type on the scale subresource -----------------------------------------------------

def test_kubectl_patches_a_deployments_scale_with_its_default_strategic_merge_patch(hub: Hub, space: str) -> None:
    hub.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1", space=space)
    out = hub.kubectl("patch", "deployment", "web", "--subresource=scale", "-p", '{"spec":{"replicas":2}}',
                      space=space)
    assert "scale.autoscaling/web patched" in out.stdout
    for patch_type, body in (("merge", '{"spec":{"replicas":3}}'),
                             ("json", '[{"op":"replace","path":"/spec/replicas","value":4}]')):
        hub.kubectl("patch", "deployment", "web", "--subresource=scale", f"--type={patch_type}", "-p", body,
                    space=space)
    assert hub.kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}", space=space).stdout == "4"


def test_the_official_client_and_lightkube_patch_a_deployments_scale(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1", space=space)
    apps = k8s.AppsV1Api(hub.api_client(space))
    scale = apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    assert scale.spec.replicas == 5

    kubeconfig = tmp_path / "space.kubeconfig"
    kubeconfig.write_text(hub.spacehub("space", "kubeconfig", space).stdout)
    light = LightClient(KubeConfig.from_file(kubeconfig))
    patched = light.patch(LightDeployment.Scale, "web", {"spec": {"replicas": 6}}, namespace="default")
    assert patched.spec.replicas == 6
    light.replace(LightDeployment.Scale(metadata=patched.metadata, spec=ScaleSpec(replicas=7)), "web",
                  namespace="default")
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 7


def test_server_side_apply_of_a_scale_owns_the_replicas(hub: Hub, space: str) -> None:
    hub.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1", space=space)
    path = f"/clusters/{space}/apis/apps/v1/namespaces/default/deployments/web/scale"
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 3}}
    with hub.client() as c:
        r = c.patch(path, params={"fieldManager": "autoscaler", "force": "true"}, content=json.dumps(body),
                    headers={"Content-Type": "application/apply-patch+yaml"})
        assert r.status_code == 200, r.text
        assert r.json()["spec"]["replicas"] == 3
        deployment = c.get(f"/clusters/{space}/apis/apps/v1/namespaces/default/deployments/web").json()
    entries = [m for m in deployment["metadata"]["managedFields"] if m["manager"] == "autoscaler"]
    assert [(m["operation"], m.get("subresource")) for m in entries] == [("Apply", "scale")]
    assert entries[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_a_custom_resources_scale_refuses_strategic_merge_patch_as_upstream(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", space=space)
    widget = {"apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"image": f"r/w@{DIGEST}", "owner": "team-a", "replicas": 1}}
    path = f"/clusters/{space}/apis/example.spacehub.io/v1/namespaces/default/widgets"
    with hub.client() as c:
        create(c, path, widget)
        smp = c.patch(f"{path}/w/scale", content='{"spec":{"replicas":2}}',
                      headers={"Content-Type": "application/strategic-merge-patch+json"})
        merge = c.patch(f"{path}/w/scale", content='{"spec":{"replicas":2}}',
                        headers={"Content-Type": "application/merge-patch+json"})
    assert smp.status_code == 415, smp.text
    assert merge.status_code == 200, merge.text
    assert merge.json()["spec"]["replicas"] == 2


# --- 5. whoami and can-i --------------------------------------------------------------------------------

def test_kubectl_auth_whoami_and_can_i_answer(hub: Hub, space: str) -> None:
    whoami = hub.kubectl("auth", "whoami", "-o", "json", space=space)
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == "admin"
    assert "system:masters" in info["groups"]
    assert hub.kubectl("auth", "can-i", "create", "deployments", space=space).stdout.strip() == "yes"
    assert hub.kubectl("auth", "can-i", "delete", "secrets", "-n", "kube-system", space=space).stdout.strip() \
        == "yes"
    rules = hub.kubectl("auth", "can-i", "--list", space=space).stdout
    assert "*.*" in rules.splitlines()[1]


def test_an_access_review_without_attributes_is_invalid_and_reviews_are_not_listed(hub: Hub, space: str) -> None:
    path = f"/clusters/{space}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    with hub.client() as c:
        r = c.post(path, json={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                               "spec": {}})
        listed = c.get(path)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "spec.resourceAttributes"
    assert listed.status_code == 405, listed.text


# --- 6. what an immediate delete answers ------------------------------------------------------------------

def test_an_immediate_delete_answers_a_status_or_the_object_as_upstream_stores_do(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}/api/v1/namespaces/default"
    with hub.client() as c:
        cm = create(c, f"{base}/configmaps", configmap("gone"))
        status = c.delete(f"{base}/configmaps/gone").json()
        create(c, f"{base}/serviceaccounts", {"metadata": {"name": "robot"}})
        sa = c.delete(f"{base}/serviceaccounts/robot").json()
        create(c, f"/clusters/{space}/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": "r"}})
        role = c.delete(f"/clusters/{space}/apis/rbac.authorization.k8s.io/v1/clusterroles/r").json()
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                      "details": {"name": "gone", "kind": "configmaps", "uid": cm["metadata"]["uid"]}}
    assert (sa["kind"], sa["metadata"]["name"]) == ("ServiceAccount", "robot")
    assert (role["kind"], role["details"]["group"], role["details"]["kind"]) == \
        ("Status", "rbac.authorization.k8s.io", "clusterroles")


# --- 7. remainingItemCount ---------------------------------------------------------------------------------

def test_a_paged_list_says_how_many_items_remain(hub: Hub, space: str) -> None:
    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    with hub.client() as c:
        for i in range(4):  # and the namespace's kube-root-ca.crt: five in all
            create(c, path, configmap(f"cm-{i}", tier="a" if i % 2 else "b"))
        first = c.get(path, params={"limit": "2"}).json()["metadata"]
        second = c.get(path, params={"limit": "2", "continue": first["continue"]}).json()["metadata"]
        last = c.get(path, params={"limit": "2", "continue": second["continue"]}).json()["metadata"]
        selected = c.get(path, params={"limit": "1", "labelSelector": "tier=a"}).json()["metadata"]
    assert (first["remainingItemCount"], second["remainingItemCount"]) == (3, 1)
    assert "remainingItemCount" not in last and "continue" not in last
    assert "continue" in selected and "remainingItemCount" not in selected
    listed = core_api(hub, space).list_namespaced_config_map("default", limit=4)
    assert listed.metadata.remaining_item_count == 1


# --- 8. validating admission sees no-op updates ---------------------------------------------------------

FROZEN_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: frozen}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [configmaps]}]
  validations:
  - expression: "!has(object.metadata.labels) || !('frozen' in object.metadata.labels)"
    message: frozen configmaps are never updated
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: frozen}
spec: {policyName: frozen, validationActions: [Deny]}
"""


def test_a_no_op_update_is_still_admitted_by_policies(hub: Hub, space: str, tmp_path: Path) -> None:
    hub.kubectl("apply", "-f", "-", input=FROZEN_POLICY, space=space)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(yaml.safe_dump(configmap("ice", frozen="yes")))
    hub.kubectl("create", "-f", str(manifest), space=space)
    out = wait_for(lambda: _refused(hub.kubectl("replace", "-f", str(manifest), space=space, check=False)),
                   message="the policy to refuse an unchanged replace")
    assert "frozen configmaps are never updated" in out


def _refused(proc: Any) -> str | None:
    return proc.stderr if proc.returncode != 0 else None


# --- 2. deleting a CRD a policy guards -----------------------------------------------------------------------

GUARD_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: crd-guard}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apiextensions.k8s.io], apiVersions: [v1], operations: [UPDATE],
                     resources: [customresourcedefinitions]}]
  validations:
  - expression: "false"
    message: CRDs of this space are managed by their bundle
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: crd-guard}
spec: {policyName: crd-guard, validationActions: [Deny]}
"""


def test_a_guarded_crd_terminates_serves_reads_and_goes_when_its_objects_are_gone(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", space=space)
    kept = {"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
            "metadata": {"name": "kept", "finalizers": ["example.spacehub.io/hold"]},
            "spec": {"image": f"r/w@{DIGEST}", "owner": "team-a"}}
    hub.kubectl("apply", "-f", "-", input=yaml.safe_dump(kept), space=space)
    hub.kubectl("apply", "-f", "-", input=GUARD_POLICY, space=space)
    wait_for(lambda: _refused(hub.kubectl("label", "crd", "widgets.example.spacehub.io", "x=y", space=space,
                                          check=False)), message="the guard policy to refuse CRD updates")

    hub.kubectl("delete", "crd", "widgets.example.spacehub.io", "--wait=false", space=space)
    crd = "crd/widgets.example.spacehub.io"
    hub.kubectl("wait", "--for=condition=Terminating", crd, "--timeout=20s", space=space)
    assert hub.kubectl("get", "widgets", "-o", "name", space=space).stdout.strip() == "widget.example.spacehub.io/kept"
    another = {**kept, "metadata": {"name": "another"}}
    refused = hub.kubectl("create", "-f", "-", input=yaml.safe_dump(another), space=space, check=False)
    assert refused.returncode != 0
    assert "create not allowed while custom resource definition is terminating" in refused.stderr

    hub.kubectl("patch", "widget", "kept", "--type=merge", "-p", '{"metadata":{"finalizers":null}}', space=space)
    hub.kubectl("wait", "--for=delete", crd, "--timeout=30s", space=space)


# --- 10. the annotation limit of client-side apply --------------------------------------------------------------

def _large_crd() -> str:
    crd = yaml.safe_load((FIXTURES / "widgets.yaml").read_text())
    crd["metadata"]["name"] = "bigs.example.spacehub.io"
    crd["spec"]["names"] = {"kind": "Big", "plural": "bigs", "singular": "big", "listKind": "BigList"}
    crd["spec"]["versions"] = [crd["spec"]["versions"][0]]
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for i in range(300):
        props[f"field{i}"] = {"type": "string", "description": f"field {i} " + "x" * 1000}
    return yaml.safe_dump(crd)


def test_a_large_crd_needs_server_side_apply_exactly_as_upstream(hub: Hub, space: str) -> None:
    big = _large_crd()
    client_side = hub.kubectl("apply", "-f", "-", input=big, space=space, check=False)
    assert client_side.returncode != 0
    # apimachinery's ValidateAnnotations: field.TooLong on the kubectl.kubernetes.io/last-applied-configuration.
    assert "metadata.annotations: Too long: may not be more than 262144 bytes" in client_side.stderr
    hub.kubectl("apply", "--server-side", "-f", "-", input=big, space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/bigs.example.spacehub.io", space=space)


# --- events.k8s.io/v1: the same Events through the newer API -----------------------------------------

def events_v1_event(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-11-24T10:00:00.000000Z", "reportingController": "example.com/ctrl",
            "reportingInstance": "ctrl-0", "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "cm", "apiVersion": "v1"},
            "note": "synced the config", **extra}


def test_events_are_one_storage_served_as_core_v1_and_events_k8s_io_v1(hub: Hub, space: str) -> None:
    hub.kubectl("create", "configmap", "cm", space=space)
    uid = json.loads(hub.kubectl("get", "configmap", "cm", "-o", "json", space=space).stdout)["metadata"]["uid"]
    # Written through events.k8s.io/v1, read through core/v1 (and kubectl describe, which selects by uid).
    new_style = events_v1_event("new-style")
    new_style["regarding"]["uid"] = uid
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(new_style))
    core = json.loads(hub.kubectl("get", "events", "new-style", "-o", "json", space=space).stdout)
    assert core["apiVersion"] == "v1"
    assert (core["involvedObject"]["name"], core["message"], core["reportingComponent"]) == \
        ("cm", "synced the config", "example.com/ctrl")
    assert "synced the config" in hub.kubectl("describe", "configmap", "cm", space=space).stdout

    # Written through core/v1 (old style), read through events.k8s.io/v1, with its field selectors.
    old_style = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old-style", "namespace": "default"},
                 "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "cm"},
                 "reason": "Legacy", "message": "from an old client", "type": "Warning", "count": 3,
                 "source": {"component": "old-ctrl"}, "firstTimestamp": "2026-11-24T09:00:00Z",
                 "lastTimestamp": "2026-11-24T09:30:00Z"}
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(old_style))
    listed = json.loads(hub.kubectl("get", "events.v1.events.k8s.io", "-o", "json", "--field-selector",
                                    "regarding.name=cm,reason=Legacy", space=space).stdout)
    assert [e["metadata"]["name"] for e in listed["items"]] == ["old-style"]
    event = listed["items"][0]
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert (event["regarding"]["name"], event["note"], event["deprecatedCount"], event["deprecatedSource"]) == \
        ("cm", "from an old client", 3, {"component": "old-ctrl"})
    assert "involvedObject" not in event and "message" not in event
    # core's field names are not events.k8s.io's: refused as upstream's field-label conversion refuses them.
    wrong = hub.kubectl("get", "events.v1.events.k8s.io", "--field-selector", "involvedObject.name=cm",
                        space=space, check=False)
    assert wrong.returncode != 0 and "involvedObject.name" in wrong.stderr
    table = hub.kubectl("get", "events.v1.events.k8s.io", space=space).stdout.splitlines()
    assert table[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("configmap/cm" in line and "from an old client" in line for line in table[1:])

    # A watch through events.k8s.io/v1 sees what core/v1 writes, in the newer shape.
    with hub.client() as c:
        base = f"/clusters/{space}/apis/events.k8s.io/v1/namespaces/default/events"
        rv = c.get(base).json()["metadata"]["resourceVersion"]
        create(c, f"/clusters/{space}/api/v1/namespaces/default/events",
               {**old_style, "metadata": {"name": "watched", "namespace": "default"}})
        with c.stream("GET", base, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "5"}) as r:
            first = json.loads(next(r.iter_lines()))
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "watched"
    assert first["object"]["note"] == "from an old client"


def test_events_k8s_io_v1_validates_as_upstream_with_cores_field_paths(hub: Hub, space: str) -> None:
    bad = events_v1_event("bad", deprecatedCount=2, deprecatedSource={"component": "x"},
                          series={"count": 1, "lastObservedTime": "2026-11-24T10:00:01.000000Z"})
    del bad["eventTime"]
    with hub.client() as c:
        r = c.post(f"/clusters/{space}/apis/events.k8s.io/v1/namespaces/default/events", json=bad)
        assert r.status_code == 422, r.text
        causes = {(cause["field"], cause["message"]) for cause in r.json()["details"]["causes"]}
        assert ("eventTime", "Required value") in causes
        assert ("count", 'Invalid value: "": needs to be unset') in causes
        assert ("source", 'Invalid value: "": needs to be unset') in causes
        assert ("series.count", 'Invalid value: "": should be at least 2') in causes
        created = create(c, f"/clusters/{space}/apis/events.k8s.io/v1/namespaces/default/events",
                         events_v1_event("good"))
        # The recorded facts are immutable; the series may grow.
        changed = {**created, "reason": "Other"}
        r = c.put(f"/clusters/{space}/apis/events.k8s.io/v1/namespaces/default/events/good", json=changed)
        assert r.status_code == 422 and "field is immutable" in r.text
        grown = {**created, "series": {"count": 2, "lastObservedTime": "2026-11-24T10:05:00.000000Z"}}
        r = c.put(f"/clusters/{space}/apis/events.k8s.io/v1/namespaces/default/events/good", json=grown)
        assert r.status_code == 200, r.text
        assert c.get(f"/clusters/{space}/api/v1/namespaces/default/events/good").json()["series"]["count"] == 2
