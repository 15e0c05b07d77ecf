"""Kube API fidelity, round 3 (issue 31): Leases for leader election, kube's system namespaces, the kinds
kube stores that a space stored too little of, and the defects client test suites found.

Everything goes through real clients against a real hub: kubectl, the official Python client (its leader
election in separate processes), and raw HTTP where the bytes themselves are what a client compares.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Hub, wait_for

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def _names(hub: Hub, space: str, resource: str, *args: str) -> set[str]:
    out = hub.kubectl("get", resource, *args, "-o", "jsonpath={.items[*].metadata.name}", space=space).stdout
    return set(out.split())


# --- namespaces as kube has them ---------------------------------------------------------------------

def test_a_space_has_kubes_system_namespaces(hub: Hub, space: str) -> None:
    assert _names(hub, space, "namespaces") == SYSTEM_NAMESPACES


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_kubes_immortal_namespaces_cannot_be_deleted(hub: Hub, space: str, name: str) -> None:
    proc = hub.kubectl("delete", "namespace", name, space=space, check=False)
    assert proc.returncode != 0
    assert f'namespaces "{name}" is forbidden: this namespace may not be deleted' in proc.stderr
    with hub.client() as c:
        r = c.delete(f"/clusters/{space}/api/v1/namespaces/{name}", params={"dryRun": "All"})
    assert (r.status_code, r.json()["reason"], r.json()["details"]) == (
        403, "Forbidden", {"name": name, "kind": "namespaces"})
    assert _names(hub, space, "namespaces") == SYSTEM_NAMESPACES


def test_kube_node_lease_can_be_deleted_and_a_restarted_hub_brings_it_back(
        hub_factory: Any) -> None:
    own = hub_factory()
    own.create_space("old")
    own.kubectl("delete", "namespace", "kube-node-lease", "--wait=true", space="old")
    assert _names(own, "old", "namespaces") == SYSTEM_NAMESPACES - {"kube-node-lease"}
    own.stop()
    own.start()
    # A space that lacks a system namespace (made before it was added to every space) gets it at startup.
    assert _names(own, "old", "namespaces") == SYSTEM_NAMESPACES


# --- Leases and the official client's leader election -------------------------------------------------

def _candidate(hub: Hub, space: str, identity: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "tests.leader_candidate", f"{hub.base_url}/clusters/{space}",
                                 str(hub.ca_file), hub.token, identity], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)


def _leaders(logs: dict[str, Path]) -> set[str]:
    return {who for who, log in logs.items() if f"leading {who}" in log.read_text(errors="replace")}


def _holder(hub: Hub, space: str) -> str:
    return hub.kubectl("get", "lease", "candidates", "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}",
                       space=space, check=False).stdout


def test_the_python_clients_leader_election_fails_over_when_the_leader_dies(
        hub: Hub, space: str, tmp_path: Path) -> None:
    logs = {who: tmp_path / f"{who}.log" for who in ("alpha", "beta")}
    procs = {who: _candidate(hub, space, who, log) for who, log in logs.items()}
    try:
        first = wait_for(lambda: _leaders(logs), timeout=30, message="a first leader")
        assert len(first) == 1, first
        (leader,) = first
        assert _holder(hub, space) == leader
        (follower,) = set(logs) - first
        procs[leader].kill()
        procs[leader].wait(timeout=10)
        # The follower takes over once the dead leader's lease (4s) has run out without renewal.
        wait_for(lambda: follower in _leaders(logs), timeout=30, message=f"{follower} to take over")
        wait_for(lambda: _holder(hub, space) == follower, timeout=10, message="the lease to name the new holder")
        table = hub.kubectl("get", "leases", "-n", "kube-system", space=space).stdout.splitlines()
        assert table[0].split() == ["NAME", "HOLDER", "AGE"]
        assert table[1].split()[:2] == ["candidates", follower]
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=10)


def test_a_lease_is_validated_as_upstream(hub: Hub, space: str) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}
    proc = hub.kubectl("apply", "-n", "default", "-f", "-", input=json.dumps(lease), space=space, check=False)
    assert proc.returncode != 0
    assert proc.stderr == ('The Lease "l" is invalid: \n* spec.leaseDurationSeconds: Invalid value: 0: must be '
                           "greater than 0\n* spec.leaseTransitions: Invalid value: -1: must be greater than or "
                           "equal to 0\n")


# --- storage-only kinds --------------------------------------------------------------------------------

POD_TEMPLATE_SPEC = {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}


def test_pod_templates_replication_controllers_and_csi_storage_capacities_are_stored(
        hub: Hub, space: str) -> None:
    objects = [
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt"}, "template": POD_TEMPLATE_SPEC},
        {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
         "spec": {"replicas": 2, "template": POD_TEMPLATE_SPEC}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "cap"},
         "storageClassName": "fast", "capacity": "10Gi"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "unknown"},
         "storageClassName": "slow"},
    ]
    hub.kubectl("apply", "-n", "default", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                         "items": objects}), space=space)
    rc = json.loads(hub.kubectl("get", "rc", "rc", "-n", "default", "-o", "json", space=space).stdout)
    # Upstream's defaulting: selector and labels from the template's labels; the template's pod defaults.
    assert rc["spec"]["selector"] == {"app": "web"} and rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert rc["status"] == {"replicas": 0}
    tables = {kind: hub.kubectl("get", kind, "-n", "default", *extra, space=space).stdout.splitlines()
              for kind, extra in (("podtemplates", ()), ("replicationcontrollers", ("-o", "wide")),
                                  ("csistoragecapacities", ()))}
    assert [line.split() for line in tables["podtemplates"]] == [
        ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"], ["pt", "web", "nginx:1.27", "app=web"]]
    assert tables["replicationcontrollers"][0].split() == [
        "NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    rc_row = tables["replicationcontrollers"][1].split()
    assert rc_row[:4] == ["rc", "2", "0", "0"] and rc_row[5:] == ["web", "nginx:1.27", "app=web"]
    assert [line.split() for line in tables["csistoragecapacities"]] == [
        ["NAME", "STORAGECLASSNAME", "CAPACITY"], ["cap", "fast", "10Gi"], ["unknown", "slow", "<unset>"]]
    assert "replicationcontroller/rc" in hub.kubectl("get", "all", "-n", "default", "-o", "name", space=space).stdout
    hub.kubectl("scale", "rc", "rc", "-n", "default", "--replicas=3", space=space)
    with hub.client() as c:
        scale = c.get(f"/clusters/{space}/api/v1/namespaces/default/replicationcontrollers/rc/scale").json()
    assert (scale["spec"], scale["status"]) == ({"replicas": 3}, {"replicas": 0, "selector": "app=web"})
    explained = hub.kubectl("explain", "leases.spec", space=space).stdout
    assert "holderIdentity" in explained and "leaseDurationSeconds" in explained


def test_storage_only_kinds_are_validated_with_kubes_field_paths(hub: Hub, space: str) -> None:
    bad = [
        ({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
          "spec": {"selector": {"app": "other"}, "template": POD_TEMPLATE_SPEC}},
         'The ReplicationController "rc" is invalid: spec.template.metadata.labels: Invalid value: '
         '{"app":"web"}: `selector` does not match template `labels`'),
        ({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt"},
          "template": {"spec": {"containers": [{"name": "c"}]}}},
         'The PodTemplate "pt" is invalid: template.spec.containers[0].image: Required value'),
        ({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "cap"}},
         'The CSIStorageCapacity "cap" is invalid: storageClassName: Required value'),
    ]
    for obj, message in bad:
        proc = hub.kubectl("create", "-n", "default", "-f", "-", input=json.dumps(obj), space=space, check=False)
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr


# --- the defects client test suites found -------------------------------------------------------------

@pytest.mark.parametrize("given", ["v1", "0", "", "-3"])
def test_a_create_ignores_a_resource_version_that_is_not_a_positive_integer(
        hub: Hub, space: str, given: str) -> None:
    name = f"rv-{given.encode().hex() or 'empty'}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": given}}
    with hub.client() as c:
        r = c.post(f"/clusters/{space}/api/v1/namespaces/default/configmaps", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["resourceVersion"] not in (given, "")
    assert int(r.json()["metadata"]["resourceVersion"]) > 0


def test_a_create_with_a_non_zero_resource_version_is_refused(hub: Hub, space: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rv", "resourceVersion": "12"}}
    with hub.client() as c:
        r = c.post(f"/clusters/{space}/api/v1/namespaces/default/configmaps", json=body)
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        400, "BadRequest", "resourceVersion should not be set on objects to be created")


def test_delete_options_of_the_wrong_json_type_are_a_bad_request(hub: Hub, space: str) -> None:
    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps/cm"
    with hub.client() as c:
        assert c.post(f"/clusters/{space}/api/v1/namespaces/default/configmaps",
                      json={"metadata": {"name": "cm"}}).status_code == 201
        for body, message in (
                ({"dryRun": 1.5}, "json: cannot unmarshal number into Go struct field DeleteOptions.dryRun of "
                                  "type []string"),
                ({"preconditions": {"uid": 7}}, "json: cannot unmarshal number into Go struct field "
                                                "Preconditions.preconditions.uid of type string")):
            r = c.request("DELETE", path, json=body)
            assert (r.status_code, r.json()["reason"], r.json()["message"]) == (400, "BadRequest", message)
        assert c.get(path).status_code == 200  # nothing was deleted
    # The hub stays up and answers the next request.
    assert "cm" in _names(hub, space, "configmaps", "-n", "default")


def test_a_patch_with_keys_outside_latin_1_gets_its_warnings_as_utf_8(hub: Hub, space: str) -> None:
    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps/cm"
    key = 'ключ-€-"q"-😀'
    with hub.client() as c:
        assert c.post(f"/clusters/{space}/api/v1/namespaces/default/configmaps",
                      json={"metadata": {"name": "cm"}}).status_code == 201
        r = c.patch(path, content=json.dumps({key: 1, "data": {"a": "b"}}),
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"a": "b"}
    # As kube's NewWarningHeader: quotes escaped inside the quoted text, the UTF-8 bytes as they are.
    raw = next(v for k, v in r.headers.raw if k.lower() == b"warning")
    assert raw.decode("utf-8") == r'299 - "unknown field \"ключ-€-\"q\"-😀\""'
    # kubectl reads the header back to the text the server meant.
    proc = hub.kubectl("patch", "configmap", "cm", "-n", "default", "--type", "merge",
                       "-p", json.dumps({"schlüssel-€": 1}, ensure_ascii=False), space=space)
    assert 'Warning: unknown field "schlüssel-€"' in proc.stderr, proc.stderr


def test_error_status_bodies_are_kubes_bytes(hub: Hub, space: str) -> None:
    with hub.client() as c:
        r = c.get(f"/clusters/{space}/api/v1/namespaces/default/configmaps/missing")
        unknown = c.get(f"/clusters/{space}/no/such/path")
    assert r.status_code == 404
    assert r.content == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                         b'"message":"configmaps \\"missing\\" not found","reason":"NotFound",'
                         b'"details":{"name":"missing","kind":"configmaps"},"code":404}\n')
    assert unknown.status_code == 404
    assert unknown.content.endswith(b'"reason":"NotFound","code":404}\n')
