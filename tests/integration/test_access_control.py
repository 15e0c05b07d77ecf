"""Access control per space through real kubectl: users with their own tokens, RBAC bindings evaluated on every
request, entry to a space as a permission in its parent, the escalation rules, revocation, expiry and the
administrator's token rotation."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import KUBECTL, Hub, hub_processes, metric_samples, metric_value, wait_for


@dataclass
class User:
    hub: Hub
    name: str
    kubeconfig: Path

    @property
    def token(self) -> str:
        import yaml

        return yaml.safe_load(self.kubeconfig.read_text())["users"][0]["user"]["token"]

    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.hub.env, "KUBECONFIG": str(self.kubeconfig)}
        assert KUBECTL
        return subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=env, timeout=60)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.hub.base_url}{path}", headers={"Authorization": f"Bearer {self.token}"},
                         verify=self.hub.ssl_context(), timeout=10)


def make_user(hub: Hub, tmp_path: Path, name: str, space: str, role: str, *extra: str) -> User:
    out = tmp_path / f"{name}.kubeconfig"
    hub.spacehub("user", "create", name, "--space", space, "--role", role, "--out", str(out), *extra)
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    return User(hub, name, out)


def cluster_role_grant(name: str, rule: dict[str, Any], subject: dict[str, str]) -> list[dict[str, Any]]:
    """A ClusterRole ``name`` with one ``rule`` and its ClusterRoleBinding to ``subject`` (``kind``, ``name``)."""
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": [rule]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}]}]


def configmap(name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})


@pytest.fixture
def spaces(hub: Hub, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """Two new spaces, named after the test."""
    stem = "ac-" + request.node.name.lower().replace("_", "-")[5:30].strip("-")
    names = (f"{stem}-a", f"{stem}-b")
    for name in names:
        hub.create_space(name)
    yield names


def test_a_view_user_reads_its_space_cannot_write_and_is_refused_elsewhere(hub: Hub, tmp_path: Path,
                                                                           spaces: tuple[str, str]) -> None:
    own, other = spaces
    hub.kubectl("create", "configmap", "settings", "--from-literal=color=blue", space=own)
    alice = make_user(hub, tmp_path, "alice-view", own, "view")

    listed = alice.kubectl("get", "configmaps", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "configmap/settings" in listed.stdout
    assert alice.kubectl("get", "namespaces").returncode == 0

    refused = alice.kubectl("create", "-f", "-", input=configmap("mine"))
    assert refused.returncode == 1
    assert ('Error from server (Forbidden): error when creating "STDIN": configmaps is forbidden: User "alice-view" '
            'cannot create resource "configmaps" in API group "" in the namespace "default"') in refused.stderr
    deleting = alice.kubectl("delete", "configmap", "settings")
    assert deleting.returncode == 1 and 'configmaps "settings" is forbidden' in deleting.stderr
    secrets = alice.kubectl("get", "secrets")
    assert secrets.returncode == 1 and 'cannot list resource "secrets"' in secrets.stderr

    elsewhere = alice.kubectl("--server", f"{hub.base_url}/clusters/{other}", "get", "configmaps")
    assert elsewhere.returncode == 1 and "Error from server (Forbidden)" in elsewhere.stderr
    # kubectl stops at discovery and does not print the reason; the Status says it.
    status = alice.get(f"/clusters/{other}/api/v1/namespaces/default/configmaps").json()
    assert status["code"] == 403 and status["reason"] == "Forbidden"
    assert (f'entering space "root:{other}" needs "access" on spaces/content "{other}" in space "root"'
            in status["message"])
    # A space that does not exist is refused the same way: its existence is not disclosed.
    assert alice.get(f"/clusters/{other}-nowhere/api/v1/namespaces/default/configmaps").status_code == 403

    whoami = alice.kubectl("auth", "whoami", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    assert json.loads(whoami.stdout)["status"]["userInfo"] == {"username": "alice-view",
                                                                 "groups": ["system:authenticated"]}
    # The hub's other endpoints ask the same authorizer: reads of the space's placements pass, the rest is 403.
    assert alice.get(f"/placement/v1/spaces/{own}/placements").status_code == 200
    assert alice.get(f"/placement/v1/spaces/{other}/placements").status_code == 403
    # A staged rollout's state and history are reads of the placement; its controls are updates, refused here.
    assert alice.get(f"/placement/v1/spaces/{own}/placements/web/history").status_code == 404
    assert alice.get(f"/placement/v1/spaces/{other}/placements/web/rollout").status_code == 403
    paused = httpx.post(f"{hub.base_url}/placement/v1/spaces/{own}/placements/web:pause",
                        headers={"Authorization": f"Bearer {alice.token}"}, verify=hub.ssl_context(), timeout=10)
    assert paused.status_code == 403 and 'cannot update resource "edgeplacements"' in paused.json()["message"], \
        paused.text
    # Asking for a placement's new choice writes the placement: "update", which view does not have.
    reschedule = httpx.post(f"{hub.base_url}/placement/v1/spaces/{own}/placements/any:reschedule",
                            headers={"Authorization": f"Bearer {alice.token}"}, verify=hub.ssl_context(), timeout=10)
    assert reschedule.status_code == 403 and 'cannot update resource "edgeplacements"' in reschedule.json()["message"]
    assert alice.get("/metrics").status_code == 403
    assert alice.get("/placement/v1/clusters").status_code == 403
    assert alice.get("/spacehub/v1/users").status_code == 403

    samples = metric_samples(hub)
    assert metric_value(samples, "apiserver_request_total", verb="POST", resource="configmaps", code="403") >= 1


# (verb, resource, namespace, expected) for a user bound to "edit" in the space and, through a group, to a Role
# that reads pods' logs in namespace "ops".
CAN_I = [
    ("get", "configmaps", "default", True), ("create", "configmaps", "default", True),
    ("delete", "configmaps", "ops", True), ("list", "secrets", "default", True),
    ("create", "secrets", "default", True), ("create", "deployments.apps", "default", True),
    ("patch", "deployments.apps", "ops", True), ("update", "deployments.apps/scale", "default", True),
    ("create", "edgeplacements.edge.kubestellar.io", "", True), ("list", "namespaces", "", True),
    ("create", "namespaces", "", True), ("get", "placementstatuses.status.spacehub.io", "default", True),
    ("update", "deployments.apps/status", "default", False),
    ("create", "roles.rbac.authorization.k8s.io", "ops", False),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", "", False),
    ("create", "customresourcedefinitions.apiextensions.k8s.io", "", False),
    ("get", "pods/log", "ops", True), ("get", "pods/log", "default", True),
    ("create", "pods/exec", "ops", True), ("delete", "pods", "ops", True),  # as kube's edit: debugging pods
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", False),
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", False), ("watch", "combinedstatuses.control.kubestellar.io",
                                                                  "default", True),
]


def test_kubectl_auth_can_i_answers_match_the_bindings(hub: Hub, tmp_path: Path, spaces: tuple[str, str]) -> None:
    own, other = spaces
    bob = make_user(hub, tmp_path, "bob-edit", own, "edit", "--group", "sre")
    hub.kubectl("create", "namespace", "ops", space=own)
    hub.kubectl("apply", "-f", "-", space=own, input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "log-reader", "namespace": "ops"},
        "rules": [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]}))
    hub.kubectl("create", "rolebinding", "sre-logs", "-n", "ops", "--role=log-reader", "--group=sre", space=own)

    answers = []
    for verb, resource, namespace, _ in CAN_I:
        resource, _, subresource = resource.partition("/")
        args = ["auth", "can-i", verb, resource] + (["-n", namespace] if namespace else []) + \
            ([f"--subresource={subresource}"] if subresource else [])
        proc = bob.kubectl(*args)
        assert proc.stdout.strip() in ("yes", "no"), proc.stderr
        answers.append(proc.stdout.strip() == "yes")
    assert answers == [expected for *_, expected in CAN_I]

    # The space's own admin answers yes to everything; in another space the user may not even ask.
    assert hub.kubectl("auth", "can-i", "escalate", "clusterroles", space=own).stdout.strip() == "yes"
    elsewhere = bob.kubectl("--server", f"{hub.base_url}/clusters/{other}", "auth", "can-i", "get", "configmaps")
    assert elsewhere.returncode != 0 and "Forbidden" in elsewhere.stderr
    listing = bob.kubectl("auth", "can-i", "--list", "-n", "ops")
    assert listing.returncode == 0, listing.stderr
    assert "pods/log" in listing.stdout and "secrets" in listing.stdout


def test_no_one_grants_more_than_they_hold(hub: Hub, tmp_path: Path, spaces: tuple[str, str]) -> None:
    own, _ = spaces
    carol = make_user(hub, tmp_path, "carol-admin", own, "admin")
    dave = make_user(hub, tmp_path, "dave-edit", own, "edit")

    # An admin may hand out what it holds: view to someone else, a role reading configmaps.
    granted = carol.kubectl("create", "clusterrolebinding", "erin-view", "--clusterrole=view", "--user=erin")
    assert granted.returncode == 0, granted.stderr
    made = carol.kubectl("create", "role", "cm-reader", "-n", "default", "--verb=get", "--resource=configmaps")
    assert made.returncode == 0, made.stderr

    # Not cluster-admin, which holds everything …
    escalating = carol.kubectl("create", "clusterrolebinding", "carol-root", "--clusterrole=cluster-admin",
                               "--user=carol-admin")
    assert escalating.returncode == 1
    assert ('clusterrolebindings.rbac.authorization.k8s.io "carol-root" is forbidden: user "carol-admin" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:'
            ) in escalating.stderr
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in escalating.stderr
    # … nor a role with more than it holds, nor an aggregating role (which could gather anything).
    wide = carol.kubectl("create", "clusterrole", "everything", "--verb=*", "--resource=*.*")
    assert wide.returncode == 1 and "attempting to grant RBAC permissions not currently held" in wide.stderr
    aggregating = carol.kubectl("create", "clusterrole", "gatherer",
                                "--aggregation-rule=rbac.authorization.k8s.io/aggregate-to-edit=true")
    assert aggregating.returncode == 1 and "not currently held" in aggregating.stderr
    # Binding a role that does not exist is refused too (nothing to compare with).
    dangling = carol.kubectl("create", "rolebinding", "ghost", "--clusterrole=no-such-role", "--user=erin")
    assert dangling.returncode == 1 and 'clusterroles.rbac.authorization.k8s.io "no-such-role" not found' in \
        dangling.stderr
    # An edit user may not write bindings at all.
    plain = dave.kubectl("create", "rolebinding", "dave-admin", "--clusterrole=admin", "--user=dave-edit")
    assert plain.returncode == 1
    assert 'User "dave-edit" cannot create resource "rolebindings"' in plain.stderr
    # And the administrator still may.
    hub.kubectl("create", "clusterrolebinding", "dave-root", "--clusterrole=cluster-admin", "--user=dave-edit",
                space=own)
    assert dave.kubectl("auth", "can-i", "escalate", "clusterroles").stdout.strip() == "yes"


WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_an_aggregated_role_gains_the_rules_of_labelled_roles(hub: Hub, tmp_path: Path,
                                                              spaces: tuple[str, str]) -> None:
    own, _ = spaces
    frank = make_user(hub, tmp_path, "frank-view", own, "view")
    hub.kubectl("apply", "-f", "-", space=own, input=json.dumps(WIDGETS_CRD))
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", space=own)
    # A custom kind is no default role's business until a role aggregates into one, as on kube.
    assert frank.kubectl("auth", "can-i", "list", "widgets.example.com").stdout.strip() == "no"
    hub.kubectl("apply", "-f", "-", space=own, input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]}))
    wait_for(lambda: frank.kubectl("auth", "can-i", "list", "widgets.example.com").stdout.strip() == "yes",
             message="the view role to aggregate widgets-view")
    # admin aggregates edit, which aggregates view: it gains the rule too.
    george = make_user(hub, tmp_path, "george-admin", own, "admin")
    assert george.kubectl("auth", "can-i", "list", "widgets.example.com").stdout.strip() == "yes"


def test_revoked_and_expired_tokens_get_401(hub: Hub, tmp_path: Path, spaces: tuple[str, str]) -> None:
    own, _ = spaces
    henry = make_user(hub, tmp_path, "henry-view", own, "view")
    assert henry.kubectl("get", "configmaps").returncode == 0
    out = hub.spacehub("user", "revoke", "henry-view")
    assert "revoked" in out.stdout
    gone = henry.kubectl("get", "configmaps")
    assert gone.returncode == 1 and "Unauthorized" in gone.stderr
    assert henry.get(f"/clusters/{own}/api/v1/namespaces").status_code == 401

    brief = make_user(hub, tmp_path, "ivy-view", own, "view", "--expires", "2s")
    assert brief.kubectl("get", "configmaps").returncode == 0
    wait_for(lambda: brief.get(f"/clusters/{own}/api/v1/namespaces").status_code == 401, timeout=15,
             message="the token to expire")
    listed = hub.spacehub("user", "list", "-o", "json")
    users = {u["name"]: u for u in json.loads(listed.stdout)["items"]}
    assert users["henry-view"]["activeTokens"] == 0 and users["ivy-view"]["activeTokens"] == 0

    bad = hub.spacehub("user", "create", "system:evil", "--space", own, "--role", "view", check=False)
    assert bad.returncode == 1 and "reserved" in bad.stderr
    wrong = hub.spacehub("user", "create", "jim", "--space", own, "--role", "view", "--expires", "soon", check=False)
    assert wrong.returncode == 1 and "invalid duration" in wrong.stderr


def test_the_admin_token_rotates_with_a_grace_period_and_stays_rotated_after_a_restart(fresh_hub: Hub) -> None:
    hub = fresh_hub
    old = hub.token
    out = hub.spacehub("user", "rotate-admin-token", "--grace", "2")
    assert "administrator token rotated" in out.stdout
    new = hub.token  # admin.token beside the kubeconfig was rewritten
    assert new != old
    assert hub.kubectl("get", "namespaces", space="root").returncode == 0  # the kubeconfig carries the new one

    def status(token: str) -> int:
        return httpx.get(f"{hub.base_url}/clusters/root/api/v1/namespaces",
                         headers={"Authorization": f"Bearer {token}"}, verify=hub.ssl_context(), timeout=10).status_code

    wait_for(lambda: status(old) == 401, timeout=15, message="the old admin token to stop")
    assert status(new) == 200
    hub.stop()
    hub.start()
    assert status(old) == 401 and status(new) == 200
    assert not os.stat(hub.data_dir / "admin.token").st_mode & 0o077


def test_tokens_work_on_every_hub_process_and_revocation_reaches_them(pg_url: str, tmp_path: Path) -> None:
    with hub_processes(pg_url, tmp_path, 2) as (first, second):
        first.create_space("shared")
        kate = make_user(first, tmp_path, "kate-view", "shared", "view")
        on_second = User(second, kate.name, kate.kubeconfig)
        assert on_second.get("/clusters/shared/api/v1/namespaces/default/configmaps").status_code == 200
        first.spacehub("user", "revoke", "kate-view")
        assert kate.get("/clusters/shared/api/v1/namespaces").status_code == 401
        wait_for(lambda: on_second.get("/clusters/shared/api/v1/namespaces").status_code == 401, timeout=15,
                 message="the other hub process to refuse the revoked token")
