"""Kubernetes API semantics over real HTTP: errors, concurrency, finalizers, GC, lists and watches."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.harness import Hub, wait_for

CM = "/api/v1/namespaces/default/configmaps"
ROOT_CA = "kube-root-ca.crt"  # every namespace has it (the hub's CA), as on kube
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def cm(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    meta.update(extra)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def assert_status(r: httpx.Response, code: int, reason: str) -> dict[str, Any]:
    assert r.status_code == code, r.text
    body = r.json()
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason, body
    return body


def test_requests_without_a_valid_token_get_401_status(hub: Hub) -> None:
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context()) as c:
        assert_status(c.get("/clusters/root/api/v1/namespaces"), 401, "Unauthorized")
        r = c.get("/clusters/root/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
        assert_status(r, 401, "Unauthorized")
        assert c.get("/healthz").status_code == 200
        assert c.get("/readyz").status_code == 200
    with hub.client() as c:
        metrics = c.get("/metrics")
        assert metrics.status_code == 200 and "spacehub_http_requests_total" in metrics.text


def test_status_errors_carry_kubernetes_codes_and_reasons(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}"
    with hub.client() as c:
        body = assert_status(c.get(f"{base}{CM}/missing"), 404, "NotFound")
        assert body["details"] == {"name": "missing", "kind": "configmaps"}
        assert c.post(f"{base}{CM}", json=cm("dup")).status_code == 201
        assert_status(c.post(f"{base}{CM}", json=cm("dup")), 409, "AlreadyExists")
        assert_status(c.post(f"{base}{CM}", content=b"{not json", headers={"Content-Type": "application/json"}),
                      400, "BadRequest")
        assert_status(c.patch(f"{base}{CM}/dup", content=b"{}", headers={"Content-Type": "text/plain"}),
                      415, "UnsupportedMediaType")
        invalid = deployment("broken")
        invalid["spec"]["template"]["spec"]["containers"] = []
        body = assert_status(c.post(f"{base}{DEPLOY}", json=invalid), 422, "Invalid")
        assert any(cause["field"].startswith("spec.template.spec.containers")
                   for cause in body["details"]["causes"])
        assert_status(c.put(f"{base}{CM}", json=cm("x")), 405, "MethodNotAllowed")
        assert_status(c.get(f"{base}/apis/nope.example.com/v1/things"), 404, "NotFound")
        assert_status(c.get("/clusters/no-such-space/api/v1/namespaces"), 404, "NotFound")
        assert_status(c.post(f"{base}/api/v1/namespaces/absent/configmaps", json=cm("x")), 404, "NotFound")


def test_update_with_a_stale_resource_version_conflicts(hub: Hub, space: str) -> None:
    url = f"/clusters/{space}{CM}/versioned"
    with hub.client() as c:
        created = c.post(f"/clusters/{space}{CM}", json=cm("versioned")).json()
        stale = dict(created)
        fresh = json.loads(json.dumps(created))
        fresh["data"] = {"k": "v2"}
        updated = c.put(url, json=fresh)
        assert updated.status_code == 200
        assert int(updated.json()["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        stale["data"] = {"k": "lost update"}
        body = assert_status(c.put(url, json=stale), 409, "Conflict")
        assert "the object has been modified" in body["message"]
        assert c.get(url).json()["data"] == {"k": "v2"}


def test_generate_name_dry_run_and_field_validation_modes(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        made = c.post(base, json={"metadata": {"generateName": "gen-"}, "data": {}}).json()
        assert made["metadata"]["name"].startswith("gen-") and len(made["metadata"]["name"]) == 9
        dry = c.post(base, params={"dryRun": "All"}, json=cm("dry"))
        assert dry.status_code == 201 and dry.json()["metadata"]["uid"]
        assert c.get(f"{base}/dry").status_code == 404
        unknown = cm("typo")
        unknown["extra"] = 1
        assert_status(c.post(base, params={"fieldValidation": "Strict"}, json=unknown), 400, "BadRequest")
        warned = c.post(base, params={"fieldValidation": "Warn"}, json=unknown)
        assert warned.status_code == 201
        assert 'unknown field' in warned.headers["warning"] and "extra" in warned.headers["warning"]
        assert "extra" not in c.get(f"{base}/typo").json()
        body = assert_status(c.patch(f"{base}/typo", params={"fieldValidation": "Strict"},
                                     content=json.dumps({"bogus": True}),
                                     headers={"Content-Type": "application/merge-patch+json"}), 422, "Invalid")
        assert 'unknown field "bogus"' in body["message"]


def test_finalizers_hold_deletion_until_removed(hub: Hub, space: str) -> None:
    url = f"/clusters/{space}{CM}/held"
    with hub.client() as c:
        c.post(f"/clusters/{space}{CM}", json=cm("held", finalizers=["example.com/hold"])).raise_for_status()
        deleting = c.delete(url).json()
        assert deleting["metadata"]["deletionTimestamp"]
        assert c.get(url).status_code == 200
        r = c.patch(url, json={"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}},
                    headers={"Content-Type": "application/merge-patch+json"})
        assert_status(r, 422, "Invalid")
        c.patch(url, json={"metadata": {"finalizers": None}},
                headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        assert c.get(url).status_code == 404


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
def test_owner_deletion_propagates_by_policy(hub: Hub, space: str, policy: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        owner = c.post(base, json=cm("owner")).json()
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
        for i in range(3):
            c.post(base, json=cm(f"child-{i}", ownerReferences=[ref])).raise_for_status()
        c.post(base, json=cm("bystander")).raise_for_status()
        r = c.request("DELETE", f"{base}/owner", json={"kind": "DeleteOptions", "apiVersion": "v1",
                                                       "propagationPolicy": policy})
        assert r.status_code == 200, r.text
        wait_for(lambda: c.get(f"{base}/owner").status_code == 404, message="owner to be deleted")
        if policy == "Orphan":
            for i in range(3):
                child = c.get(f"{base}/child-{i}").json()
                assert "ownerReferences" not in child["metadata"]
        else:
            for i in range(3):
                wait_for(lambda i=i: c.get(f"{base}/child-{i}").status_code == 404, message=f"child-{i} gone")
        assert c.get(f"{base}/bystander").status_code == 200


def test_status_subresource_and_generation(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{DEPLOY}"
    with hub.client() as c:
        created = c.post(base, json=deployment("gen")).json()
        assert created["metadata"]["generation"] == 1
        with_status = dict(created, status={"readyReplicas": 1, "replicas": 1})
        after_status = c.put(f"{base}/gen/status", json=with_status).json()
        assert after_status["status"]["readyReplicas"] == 1
        assert after_status["metadata"]["generation"] == 1
        spec_change = json.loads(json.dumps(after_status))
        spec_change["spec"]["replicas"] = 4
        spec_change["status"] = {"readyReplicas": 99}
        updated = c.put(f"{base}/gen", json=spec_change).json()
        assert updated["metadata"]["generation"] == 2
        assert updated["status"]["readyReplicas"] == 1  # status is only written through /status
        label_only = c.patch(f"{base}/gen", json={"metadata": {"labels": {"x": "y"}}},
                             headers={"Content-Type": "application/merge-patch+json"}).json()
        assert label_only["metadata"]["generation"] == 2


def test_label_and_field_selectors(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        for name, labels in [("a", {"env": "prod", "tier": "web"}), ("b", {"env": "dev"}), ("c", {})]:
            c.post(base, json=cm(name, labels)).raise_for_status()

        def names(**params: str) -> list[str]:
            r = c.get(base, params=params)
            assert r.status_code == 200, r.text
            # kube-root-ca.crt is every namespace's (unlabelled): left out of what this test compares
            return sorted(i["metadata"]["name"] for i in r.json()["items"] if i["metadata"]["name"] != ROOT_CA)

        assert names(labelSelector="env=prod") == ["a"]
        assert names(labelSelector="env!=prod") == ["b", "c"]
        assert names(labelSelector="env in (prod,dev)") == ["a", "b"]
        assert names(labelSelector="env notin (prod)") == ["b", "c"]
        assert names(labelSelector="tier") == ["a"]
        assert names(labelSelector="!tier") == ["b", "c"]
        assert names(fieldSelector="metadata.name=b") == ["b"]
        assert names(fieldSelector="metadata.name!=b") == ["a", "c"]
        assert_status(c.get(base, params={"labelSelector": "env in prod"}), 400, "BadRequest")
        assert_status(c.get(base, params={"fieldSelector": "spec.foo=bar"}), 400, "BadRequest")


def test_paged_list_keeps_one_resource_version(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        for i in range(25):
            c.post(base, json=cm(f"page-{i:02d}")).raise_for_status()
        first = c.get(base, params={"limit": 10}).json()
        rv, token = first["metadata"]["resourceVersion"], first["metadata"]["continue"]
        c.post(base, json=cm("page-99")).raise_for_status()  # written between pages: not in this list
        seen = [i["metadata"]["name"] for i in first["items"]]
        while token:
            page = c.get(base, params={"limit": 10, "continue": token}).json()
            assert page["metadata"]["resourceVersion"] == rv
            seen += [i["metadata"]["name"] for i in page["items"]]
            token = page["metadata"].get("continue", "")
        assert seen == [ROOT_CA] + [f"page-{i:02d}" for i in range(25)]


def read_events(hub: Hub, path: str, params: dict[str, str], count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with hub.client() as c, c.stream("GET", path, params={"watch": "true", **params}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) >= count:
                break
    return events


def test_watch_resumes_from_a_resource_version_and_reports_selector_transitions(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        start = c.get(base).json()["metadata"]["resourceVersion"]
        c.post(base, json=cm("w1", {"watched": "yes"})).raise_for_status()
        c.patch(f"{base}/w1", json={"data": {"k": "v2"}},
                headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        c.patch(f"{base}/w1", json={"metadata": {"labels": {"watched": "no"}}},
                headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        c.delete(f"{base}/w1").raise_for_status()
    events = read_events(hub, base, {"resourceVersion": start}, 4)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions) and revisions[0] > int(start)
    selected = read_events(hub, base, {"resourceVersion": start, "labelSelector": "watched=yes"}, 3)
    assert [e["type"] for e in selected] == ["ADDED", "MODIFIED", "DELETED"]


def test_watch_list_sends_initial_events_then_the_end_bookmark(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}{CM}"
    with hub.client() as c:
        for name in ("i1", "i2"):
            c.post(base, json=cm(name)).raise_for_status()
        bad = c.get(base, params={"watch": "true", "sendInitialEvents": "true"})
        assert_status(bad, 422, "Invalid")
    events = read_events(hub, base, {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                                     "allowWatchBookmarks": "true"}, 4)
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]  # i1, i2 and kube-root-ca.crt
    assert events[3]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_spaces_with_the_same_names_are_isolated(hub: Hub) -> None:
    hub.create_space("iso-a")
    hub.create_space("iso-b")
    with hub.client() as c:
        start = c.get(f"/clusters/iso-b{CM}").json()["metadata"]["resourceVersion"]
        got: list[dict[str, Any]] = []

        def watch_b() -> None:
            got.extend(read_events(hub, f"/clusters/iso-b{CM}", {"resourceVersion": start}, 1))

        watcher = threading.Thread(target=watch_b)
        watcher.start()
        a = cm("same")
        a["data"] = {"space": "a"}
        c.post(f"/clusters/iso-a{CM}", json=a).raise_for_status()
        assert c.get(f"/clusters/iso-b{CM}/same").status_code == 404
        b = cm("same")
        b["data"] = {"space": "b"}
        c.post(f"/clusters/iso-b{CM}", json=b).raise_for_status()
        watcher.join(timeout=20)
        assert [e["object"]["data"] for e in got] == [{"space": "b"}]
        assert c.get(f"/clusters/iso-a{CM}/same").json()["data"] == {"space": "a"}
        names_a = [i["metadata"]["name"] for i in c.get(f"/clusters/iso-a{CM}").json()["items"]]
        assert names_a == [ROOT_CA, "same"]


def test_aggregated_discovery_has_an_etag(hub: Hub, space: str) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    with hub.client() as c:
        r = c.get(f"/clusters/{space}/apis", headers={"Accept": accept})
        assert r.headers["content-type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
        groups = {g["metadata"]["name"] for g in r.json()["items"]}
        assert {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io"} <= groups
        again = c.get(f"/clusters/{space}/apis", headers={"Accept": accept, "If-None-Match": r.headers["etag"]})
        assert again.status_code == 304
        core = c.get(f"/clusters/{space}/api", headers={"Accept": accept}).json()
        resources = {res["resource"] for res in core["items"][0]["versions"][0]["resources"]}
        assert {"configmaps", "namespaces", "services", "secrets"} <= resources
        # Pods are stored like any workload, and their log and exec reach the clusters that run them.
        pods = next(res for res in core["items"][0]["versions"][0]["resources"] if res["resource"] == "pods")
        assert sorted(pods["verbs"]) == ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                         "watch"]
        assert {sub["subresource"] for sub in pods["subresources"]} == {"attach", "exec", "log", "portforward",
                                                                         "status"}


def test_space_deletion_removes_its_contents(hub: Hub) -> None:
    hub.create_space("short-lived")
    with hub.client() as c:
        c.post(f"/clusters/short-lived{CM}", json=cm("inside")).raise_for_status()
        c.delete("/clusters/root/apis/spacehub.io/v1alpha1/spaces/short-lived").raise_for_status()
        wait_for(lambda: c.get("/clusters/root/apis/spacehub.io/v1alpha1/spaces/short-lived").status_code == 404,
                 message="space to be deleted")
        assert_status(c.get(f"/clusters/short-lived{CM}/inside"), 404, "NotFound")
    hub.create_space("short-lived")
    with hub.client() as c:
        # A new space of the name: only what every namespace gets, nothing of the old one.
        assert [i["metadata"]["name"] for i in c.get(f"/clusters/short-lived{CM}").json()["items"]] == [ROOT_CA]
