"""ServiceAccounts as identities, through real kubectl against a real hub: the ``default`` ServiceAccount and
``kube-root-ca.crt`` in every namespace, ``kubectl create token`` (audience and duration honoured), a kubeconfig
made from such a token authorized by RBAC in its own space only, deleting the ServiceAccount invalidating its
tokens, a token for another audience refused by the hub, and TokenReview for ServiceAccount and users' tokens."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import KUBECTL, Hub, wait_for
from tests.integration.test_access_control import make_user
from tests.integration.test_placement import EDGE, desired, inventory


def sa_kubeconfig(hub: Hub, tmp_path: Path, space: str, token: str, name: str) -> Path:
    """A kubeconfig as a user writes one from ``kubectl create token``: the hub's CA, the space, the token."""
    path = tmp_path / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "hub", "cluster": {"server": f"{hub.base_url}/clusters/{space}",
                                                 "certificate-authority": str(hub.ca_file)}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "hub", "user": "sa", "namespace": "default"}}]}))
    return path


def as_sa(hub: Hub, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=60,
                          env={**hub.env, "KUBECONFIG": str(kubeconfig)})


def review(hub: Hub, space: str, token: str, *audiences: str) -> dict[str, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, **({"audiences": list(audiences)} if audiences else {})}}
    out = hub.kubectl("create", "-f", "-", "-o", "json", space=space, input=json.dumps(body))
    return json.loads(out.stdout)["status"]


@pytest.fixture
def space(hub: Hub, request: pytest.FixtureRequest) -> str:
    name = "sa-" + request.node.name.lower().replace("_", "-")[5:30].strip("-")
    hub.create_space(name)
    return name


def test_every_namespace_has_the_default_service_account_and_the_hubs_ca(hub: Hub, space: str) -> None:
    hub.kubectl("create", "namespace", "team", space=space)

    def defaults_present() -> bool:
        got = hub.kubectl("get", "serviceaccount/default", "configmap/kube-root-ca.crt", "-n", "team", "-o", "json",
                          space=space, check=False)
        return got.returncode == 0

    wait_for(defaults_present, timeout=30)
    ca = json.loads(hub.kubectl("get", "configmap", "kube-root-ca.crt", "-n", "team", "-o", "json",
                                space=space).stdout)
    assert ca["data"]["ca.crt"] == hub.ca_file.read_text()
    assert hub.kubectl("get", "serviceaccount", "default", "-n", "default", "-o", "name",
                       space=space).stdout.strip() == "serviceaccount/default"

    # As kube's controllers do, a deleted default ServiceAccount and a changed CA ConfigMap come back.
    uid = json.loads(hub.kubectl("get", "sa", "default", "-n", "team", "-o", "json", space=space).stdout)
    hub.kubectl("delete", "serviceaccount", "default", "-n", "team", space=space)
    hub.kubectl("patch", "configmap", "kube-root-ca.crt", "-n", "team", "-p", '{"data":{"ca.crt":"forged"}}',
                space=space)

    def restored() -> bool:
        sa = hub.kubectl("get", "sa", "default", "-n", "team", "-o", "json", space=space, check=False)
        cm = json.loads(hub.kubectl("get", "cm", "kube-root-ca.crt", "-n", "team", "-o", "json",
                                    space=space).stdout)
        return sa.returncode == 0 and json.loads(sa.stdout)["metadata"]["uid"] != uid["metadata"]["uid"] and \
            cm["data"]["ca.crt"] == hub.ca_file.read_text()

    wait_for(restored, timeout=30)


def test_the_namespace_defaults_are_not_placed_on_clusters(hub: Hub, space: str) -> None:
    """Every cluster makes its own default ServiceAccount and kube-root-ca.crt: a placement of a whole namespace
    sends neither."""
    hub.kubectl("apply", "-f", "-", space="inventory", input=inventory("sa-cluster", {"env": "sa-test"}))
    hub.kubectl("create", "namespace", "shop", space=space)
    hub.kubectl("create", "configmap", "mine", "-n", "shop", "--from-literal=a=b", space=space)
    hub.kubectl("create", "serviceaccount", "robot", "-n", "shop", space=space)
    wait_for(lambda: hub.kubectl("get", "sa/default", "cm/kube-root-ca.crt", "-n", "shop", space=space,
                                 check=False).returncode == 0, timeout=30)
    hub.kubectl("apply", "-f", "-", space=space, input=json.dumps({
        "apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "whole-shop"},
        "spec": {"locationSelectors": [{"matchLabels": {"env": "sa-test"}}],
                 "downsync": [{"namespaces": ["shop"]}]}}))
    wanted = {"namespaces//shop", "configmaps/shop/mine", "serviceaccounts/shop/robot"}
    wait_for(lambda: wanted <= desired(hub, "sa-cluster"), timeout=30, message="namespace placed")
    assert desired(hub, "sa-cluster") == wanted


def test_a_service_account_token_works_for_what_rbac_grants_in_its_space_only(hub: Hub, tmp_path: Path,
                                                                              space: str) -> None:
    hub.kubectl("create", "serviceaccount", "robot", space=space)
    hub.kubectl("create", "configmap", "settings", "--from-literal=color=blue", space=space)
    hub.kubectl("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=default:robot",
                space=space)
    token = hub.kubectl("create", "token", "robot", space=space).stdout.strip()
    robot = sa_kubeconfig(hub, tmp_path, space, token, "robot")

    # No grant in root: the token enters its own space, and RBAC there decides.
    whoami = as_sa(hub, robot, "auth", "whoami", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    user = json.loads(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == "system:serviceaccount:default:robot"
    assert set(user["groups"]) == {"system:serviceaccounts", "system:serviceaccounts:default",
                                   "system:authenticated"}
    listed = as_sa(hub, robot, "get", "configmaps", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "configmap/settings" in listed.stdout
    refused = as_sa(hub, robot, "create", "configmap", "other", "--from-literal=a=b")
    assert refused.returncode != 0
    assert 'User "system:serviceaccount:default:robot" cannot create resource "configmaps"' in refused.stderr
    assert "forbidden" in as_sa(hub, robot, "get", "secrets").stderr

    # A binding to the same name in another space grants nothing: the token is its space's.
    other = f"{space}-other"
    hub.create_space(other)
    hub.kubectl("create", "clusterrolebinding", "robot-admin", "--clusterrole=cluster-admin",
                "--serviceaccount=default:robot", space=other)
    elsewhere = as_sa(hub, robot, "--server", f"{hub.base_url}/clusters/{other}", "get", "configmaps")
    assert elsewhere.returncode != 0 and "forbidden" in elsewhere.stderr.lower(), elsewhere.stderr
    root = as_sa(hub, robot, "--server", f"{hub.base_url}/clusters/root", "get", "namespaces")
    assert root.returncode != 0 and "forbidden" in root.stderr.lower(), root.stderr

    # Deleting the ServiceAccount invalidates its tokens; a new one of the same name does not revive them.
    hub.kubectl("delete", "serviceaccount", "robot", space=space)
    hub.kubectl("create", "serviceaccount", "robot", space=space)
    gone = as_sa(hub, robot, "get", "configmaps")
    assert gone.returncode != 0
    assert "Unauthorized" in gone.stderr or "provide credentials" in gone.stderr, gone.stderr


def test_create_token_honours_duration_and_audience(hub: Hub, tmp_path: Path, space: str) -> None:
    hub.kubectl("create", "serviceaccount", "robot", space=space)
    asked = dt.datetime.now(dt.UTC)
    made = json.loads(hub.kubectl("create", "token", "robot", "--duration", "2h", "-o", "json",
                                  space=space).stdout)
    expires = dt.datetime.fromisoformat(made["status"]["expirationTimestamp"].replace("Z", "+00:00"))
    assert abs((expires - asked).total_seconds() - 7200) < 60
    assert made["spec"]["expirationSeconds"] == 7200

    short = hub.kubectl("create", "token", "robot", "--duration", "5m", space=space, check=False)
    assert short.returncode != 0
    assert "may not specify a duration less than 10 minutes" in short.stderr

    # Bad requests get kube's answers, never a crash: a wrong type is 400, a token bound to an object 422.
    token_path = f"/clusters/{space}/api/v1/namespaces/default/serviceaccounts/robot/token"
    with hub.client() as c:
        wrong_type = c.post(token_path, json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                              "spec": {"expirationSeconds": "soon"}})
        bound = c.post(token_path, json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                         "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                                                     "name": "p"}}})
        listed = c.get(token_path)
    assert (wrong_type.status_code, wrong_type.json()["reason"]) == (400, "BadRequest")
    assert (bound.status_code, bound.json()["details"]["causes"][0]["field"]) == (422, "spec.boundObjectRef")
    assert listed.status_code == 405

    missing = hub.kubectl("create", "token", "nobody", space=space, check=False)
    assert missing.returncode != 0 and 'serviceaccounts "nobody" not found' in missing.stderr

    # A token for another audience is not accepted by the hub; a TokenReview for that audience vouches for it.
    foreign = hub.kubectl("create", "token", "robot", "--audience", "https://vault.example", space=space)
    foreign_token = foreign.stdout.strip()
    refused = as_sa(hub, sa_kubeconfig(hub, tmp_path, space, foreign_token, "foreign"), "get", "configmaps")
    assert refused.returncode != 0
    assert "Unauthorized" in refused.stderr or "provide credentials" in refused.stderr, refused.stderr
    reviewed = review(hub, space, foreign_token, "https://vault.example")
    assert reviewed["authenticated"] is True
    assert reviewed["audiences"] == ["https://vault.example"]
    assert "authenticated" not in review(hub, space, foreign_token)  # not for the hub's own audience


def test_token_review_answers_for_service_account_and_user_tokens(hub: Hub, tmp_path: Path, space: str) -> None:
    hub.kubectl("create", "serviceaccount", "robot", space=space)
    uid = json.loads(hub.kubectl("get", "sa", "robot", "-o", "json", space=space).stdout)["metadata"]["uid"]
    token = hub.kubectl("create", "token", "robot", space=space).stdout.strip()

    status = review(hub, space, token)
    assert status["authenticated"] is True
    assert status["user"]["username"] == "system:serviceaccount:default:robot"
    assert status["user"]["uid"] == uid
    assert "system:serviceaccounts:default" in status["user"]["groups"]
    assert status["audiences"] == ["https://kubernetes.default.svc"]

    alice = make_user(hub, tmp_path, "alice-review", space, "view")
    user_status = review(hub, space, alice.token)
    assert user_status["authenticated"] is True and user_status["user"]["username"] == "alice-review"

    bad = review(hub, space, "not-a-token")
    assert "authenticated" not in bad and bad["error"]
    tampered = review(hub, space, token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"))
    assert "authenticated" not in tampered

    # As in kube, edit may mint tokens and view may not.
    editor = make_user(hub, tmp_path, "erin-edit", space, "edit")
    minted = subprocess.run([str(KUBECTL), "create", "token", "robot"], capture_output=True, text=True, timeout=60,
                            env={**hub.env, "KUBECONFIG": str(editor.kubeconfig)})
    assert minted.returncode == 0 and review(hub, space, minted.stdout.strip())["authenticated"], minted.stderr
    viewer_mint = alice.kubectl("create", "token", "robot")
    assert viewer_mint.returncode != 0
    assert 'cannot create resource "serviceaccounts/token"' in viewer_mint.stderr, viewer_mint.stderr

    # TokenReview is authorized like any create: a user who may only read gets kube's 403.
    denied = subprocess.run([str(KUBECTL), "create", "--validate=false", "-f", "-"], capture_output=True,
                            text=True, timeout=60, env={**hub.env, "KUBECONFIG": str(alice.kubeconfig)},
                            input=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                              "spec": {"token": token}}))
    assert denied.returncode != 0 and 'cannot create resource "tokenreviews"' in denied.stderr, denied.stderr


def test_a_start_puts_a_new_ca_in_every_namespace_and_keeps_the_service_accounts(fresh_hub: Hub) -> None:
    """At start the hub reads which namespaces hold their defaults as it would leave them, and sees to the others:
    here every namespace's, the CA having been replaced while the hub was down."""
    hub = fresh_hub
    hub.create_space("rotated")
    hub.kubectl("create", "namespace", "team", space="rotated")
    wait_for(lambda: hub.kubectl("get", "sa/default", "cm/kube-root-ca.crt", "-n", "team", space="rotated",
                                 check=False).returncode == 0, timeout=30)
    accounts = json.loads(hub.kubectl("get", "serviceaccounts", "-A", "-o", "json", space="rotated").stdout)
    old_ca = hub.ca_file.read_text()
    hub.stop()
    shutil.rmtree(hub.data_dir / "pki")
    hub.start()
    new_ca = hub.ca_file.read_text()
    assert new_ca != old_ca

    def cas() -> set[str]:
        found = json.loads(hub.kubectl("get", "configmaps", "-A", "--field-selector",
                                       "metadata.name=kube-root-ca.crt", "-o", "json", space="rotated").stdout)
        return {item["data"]["ca.crt"] for item in found["items"]}

    wait_for(lambda: cas() == {new_ca}, timeout=30, message="the new CA in every namespace")
    after = json.loads(hub.kubectl("get", "serviceaccounts", "-A", "-o", "json", space="rotated").stdout)
    assert {(sa["metadata"]["namespace"], sa["metadata"]["uid"]) for sa in after["items"]} == \
        {(sa["metadata"]["namespace"], sa["metadata"]["uid"]) for sa in accounts["items"]}
