"""A new space's default objects, through real kubectl against a real hub: once the create of a Space answers with
the space Ready, the space already holds kube's system namespaces, each with its ``default`` ServiceAccount and
``kube-root-ca.crt``, and the default RBAC ClusterRoles and bindings — at the top and nested."""

from __future__ import annotations

import json
import uuid
from typing import Any

from apiserver.rbac import bootstrap
from tests.harness import Hub

SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def revisions(hub: Hub, space: str, *args: str) -> dict[str, int]:
    """The objects ``kubectl get args`` lists, by name: the revision each was last written at."""
    listed = json.loads(hub.kubectl("get", *args, "-o", "json", space=space).stdout)
    return {item["metadata"]["name"]: int(item["metadata"]["resourceVersion"]) for item in listed["items"]}


def create_space(hub: Hub, parent: str, name: str) -> dict[str, Any]:
    body = json.dumps({"apiVersion": "spacehub.io/v1alpha1", "kind": "Space", "metadata": {"name": name}})
    return json.loads(hub.kubectl("create", "-f", "-", "-o", "json", space=parent, input=body).stdout)


def assert_written_before(hub: Hub, space: str, ready: int) -> None:
    """Every default object of ``space`` is stored, and was written before the space's Ready (revision
    ``ready``): nothing is left for a controller to add after the creator was told the space is ready."""
    written = revisions(hub, space, "namespaces")
    assert set(written) >= SYSTEM_NAMESPACES
    roles = revisions(hub, space, "clusterroles")
    assert set(roles) >= {role["metadata"]["name"] for role in bootstrap.cluster_roles()}
    bindings = revisions(hub, space, "clusterrolebindings")
    assert set(bindings) >= {binding["metadata"]["name"] for binding in bootstrap.cluster_role_bindings()}
    defaults = [written[ns] for ns in SYSTEM_NAMESPACES] + list(roles.values()) + list(bindings.values())
    for namespace in SYSTEM_NAMESPACES:
        defaults.append(revisions(hub, space, "serviceaccounts", "-n", namespace)["default"])
        ca = json.loads(hub.kubectl("get", "configmap", "kube-root-ca.crt", "-n", namespace, "-o", "json",
                                    space=space).stdout)
        assert ca["data"]["ca.crt"] == hub.ca_file.read_text()
        defaults.append(int(ca["metadata"]["resourceVersion"]))
    assert max(defaults) < ready


def test_a_new_space_holds_its_defaults_when_its_create_answers_ready(hub: Hub) -> None:
    top = f"seeded-{uuid.uuid4().hex[:8]}"
    created = create_space(hub, "root", top)
    assert created["status"]["phase"] == "Ready"
    assert_written_before(hub, top, int(created["metadata"]["resourceVersion"]))

    nested = create_space(hub, top, "inner")
    assert nested["status"]["phase"] == "Ready"
    assert_written_before(hub, f"{top}:inner", int(nested["metadata"]["resourceVersion"]))


def test_the_defaults_keep_their_field_managers(hub: Hub) -> None:
    """Who wrote what stays as before: the namespaces and roles the hub's, the CA ConfigMap kube's serviceaccounts
    controller's (a ServiceAccount shows no managedFields)."""
    space = f"managers-{uuid.uuid4().hex[:8]}"
    create_space(hub, "root", space)

    def managers(*args: str) -> set[str]:
        obj = json.loads(hub.kubectl("get", *args, "-o", "json", "--show-managed-fields", space=space).stdout)
        return {entry["manager"] for entry in obj["metadata"]["managedFields"]}

    assert managers("namespace", "kube-system") == {"spacehub"}
    assert managers("clusterrole", "view") == {"spacehub"}
    assert managers("configmap", "kube-root-ca.crt", "-n", "kube-system") == {"spacehub-serviceaccounts"}
