"""API export and binding through real kubectl against a real hub: a provider space's CRD (with CEL rules) served in
the spaces that bind its export, the provider's controller reading every bound space through one endpoint with a
credential scoped to the export, schema changes reaching the binding spaces, the unbinding rule and conflicts."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness import KUBECTL, Hub, hub_processes, kubectl_yaml, wait_for
from tests.integration.test_access_control import cluster_role_grant
from tests.syncer_harness import World, placement

GROUP = "gadgets.provider.example"


def gadgets_crd(group: str = GROUP, *, color: bool = False) -> str:
    """A namespaced CRD with a status subresource and a CEL rule; ``color`` adds a field (the schema change)."""
    spec: dict[str, Any] = {
        "type": "object", "required": ["size"],
        "x-kubernetes-validations": [{"rule": "self.size <= self.limit",
                                      "message": "size must not exceed limit", "fieldPath": ".size"}],
        "properties": {"size": {"type": "integer", "minimum": 0},
                       "limit": {"type": "integer", "default": 10}}}
    if color:
        spec["properties"]["color"] = {"type": "string", "enum": ["red", "blue"], "description": "The gadget's color."}
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": "Gadget", "listKind": "GadgetList", "plural": "gadgets", "singular": "gadget",
                           "shortNames": ["gd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": spec,
                                   "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})


def gadget(name: str, size: int, **spec: Any) -> str:
    return yaml.safe_dump({"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                           "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size, **spec}})


def provide(hub: Hub, provider: str, export: str, crd: str) -> None:
    hub.create_space(provider)
    hub.kubectl("apply", "-f", "-", input=crd, space=provider)
    hub.kubectl("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=20s", space=provider)
    hub.kubectl("apply", "-f", "-", space=provider, input=yaml.safe_dump({
        "apiVersion": "apis.spacehub.io/v1alpha1", "kind": "APIExport", "metadata": {"name": export},
        "spec": {"customResourceDefinitions": [f"gadgets.{GROUP}"]}}))


def binding(name: str, provider: str, export: str) -> str:
    """An APIBinding naming its provider by path (``root:<id>``), as a user reads it in ``kubectl space``."""
    return yaml.safe_dump({"apiVersion": "apis.spacehub.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": name},
                           "spec": {"reference": {"export": {"path": f"root:{provider}", "name": export}}}})


def bind(hub: Hub, consumer: str, provider: str, export: str, name: str = "gadgets") -> None:
    hub.create_space(consumer)
    hub.kubectl("apply", "-f", "-", input=binding(name, provider, export), space=consumer)
    hub.kubectl("wait", "--for=condition=Ready", f"apibinding/{name}", "--timeout=20s", space=consumer)


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def endpoint(hub: Hub, provider: str, export: str, space: str) -> str:
    return f"{hub.base_url}/services/apiexport/{provider}/{export}/clusters/{space}"


def controller_user(hub: Hub, tmp_path: Path, provider: str, export: str, name: str) -> Path:
    """A user of the provider space ("view") allowed to use the export's endpoint, and nothing else."""
    out = tmp_path / f"{name}.kubeconfig"
    hub.spacehub("user", "create", name, "--space", provider, "--role", "view", "--out", str(out))
    hub.kubectl("apply", "-f", "-", space=provider, input=yaml.safe_dump_all([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"{export}-content"},
         "rules": [{"apiGroups": ["apis.spacehub.io"], "resources": ["apiexports/content"], "resourceNames": [export],
                    "verbs": ["get", "list", "watch", "update", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{name}-{export}-content"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{export}-content"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]}]))
    return out


def as_user(hub: Hub, kubeconfig: Path, server: str, *args: str, input: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    assert KUBECTL
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--server", server, *args], input=input,
                          capture_output=True, text=True, env=hub.env, timeout=60)


def test_an_exported_crd_is_served_in_two_binding_spaces_with_its_cel_rules(hub: Hub) -> None:
    provide(hub, "ab-serve-provider", "gadgets", gadgets_crd())
    for consumer in ("ab-serve-a", "ab-serve-b"):
        bind(hub, consumer, "ab-serve-provider", "gadgets")
        assert hub.kubectl("get", "crd", "-o", "name", space=consumer).stdout == ""  # no CRD of its own
        resources = hub.kubectl("api-resources", f"--api-group={GROUP}", space=consumer).stdout
        assert "gadgets" in resources and "gd" in resources
        hub.kubectl("apply", "-f", "-", input=gadget(f"g-{consumer}", 3), space=consumer)
        live = kubectl_yaml(hub.kubectl("get", "gadget", f"g-{consumer}", "-n", "default", "-o", "yaml",
                                        space=consumer))
        assert live["spec"] == {"size": 3, "limit": 10}  # defaulted by the export's schema
        refused = hub.kubectl("apply", "-f", "-", input=gadget("too-big", 30), space=consumer, check=False)
        assert refused.returncode == 1 and "size must not exceed limit" in refused.stderr, refused.stderr
        assert "Size must not" not in hub.kubectl("explain", "gadget.spec", space=consumer).stderr
        assert "limit" in hub.kubectl("explain", "gadget.spec", space=consumer).stdout
    # Each space holds its own objects; the provider holds none.
    assert hub.kubectl("get", "gadgets", "-A", "-o", "name", space="ab-serve-a").stdout.split() == \
        ["gadget.gadgets.provider.example/g-ab-serve-a"]
    assert hub.kubectl("get", "gadgets", "-A", "-o", "name", space="ab-serve-provider").stdout == ""
    bound = kubectl_yaml(hub.kubectl("get", "apibinding", "gadgets", "-o", "yaml", space="ab-serve-a"))
    assert bound["status"]["boundResources"] == [{"group": GROUP, "resource": "gadgets", "crd": f"gadgets.{GROUP}",
                                                  "versions": ["v1"]}]
    assert conditions(bound)["BindingConflict"]["status"] == "False"
    export = kubectl_yaml(hub.kubectl("get", "apiexport", "gadgets", "-o", "yaml", space="ab-serve-provider"))
    assert conditions(export)["Ready"]["status"] == "True"
    assert export["status"]["url"] == f"{hub.base_url}/services/apiexport/ab-serve-provider/gadgets"


def _lines(proc: subprocess.Popen[str], into: queue.Queue[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        into.put(line.strip())


def test_the_provider_watches_every_binding_space_through_one_endpoint_and_writes_status(hub: Hub,
                                                                                        tmp_path: Path) -> None:
    provider = "ab-watch-provider"
    provide(hub, provider, "gadgets", gadgets_crd())
    bind(hub, "ab-watch-a", provider, "gadgets")
    hub.kubectl("apply", "-f", "-", input=gadget("first", 1), space="ab-watch-a")
    ctrl = controller_user(hub, tmp_path, provider, "gadgets", "gadget-ctrl")
    every = endpoint(hub, provider, "gadgets", "*")
    listed = as_user(hub, ctrl, every, "get", "gadgets", "-A")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split() == ["NAMESPACE", "NAME", "SPACE", "AGE"]
    assert listed.stdout.splitlines()[1].split()[:3] == ["default", "first", "ab-watch-a"]

    assert KUBECTL
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", str(ctrl), "--server", every, "get", "gadgets", "-A", "--watch",
                              "-o", r'jsonpath={.metadata.annotations.spacehub\.io/space}/{.metadata.name}{"\n"}'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hub.env)
    seen: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(watch, seen), daemon=True).start()
    try:
        assert seen.get(timeout=20) == "ab-watch-a/first"
        bind(hub, "ab-watch-b", provider, "gadgets")  # bound while the provider watches
        hub.kubectl("apply", "-f", "-", input=gadget("second", 2), space="ab-watch-b")
        hub.kubectl("apply", "-f", "-", input=gadget("third", 3), space="ab-watch-a")
        assert {seen.get(timeout=20), seen.get(timeout=20)} == {"ab-watch-b/second", "ab-watch-a/third"}
    finally:
        watch.terminate()
        watch.wait(timeout=10)

    one = endpoint(hub, provider, "gadgets", "ab-watch-b")
    patched = as_user(hub, ctrl, one, "patch", "gadget", "second", "-n", "default", "--subresource=status",
                      "--type=merge", "-p", '{"status":{"phase":"Running"}}', "-o", "json")
    assert patched.returncode == 0, patched.stderr
    assert json.loads(patched.stdout)["metadata"]["annotations"]["spacehub.io/space"] == "ab-watch-b"
    live = kubectl_yaml(hub.kubectl("get", "gadget", "second", "-n", "default", "-o", "yaml", space="ab-watch-b"))
    assert live["status"] == {"phase": "Running"}
    assert "spacehub.io/space" not in live["metadata"]["annotations"]  # the endpoint's annotation is never stored

    # Status only: the spec belongs to the binding space's users.
    spec = as_user(hub, ctrl, one, "patch", "gadget", "second", "-n", "default", "--type=merge", "-p",
                   '{"spec":{"size":5}}')
    assert spec.returncode == 1 and "(MethodNotAllowed)" in spec.stderr, spec.stderr
    # The credential reaches the bound objects only through the export, with the verbs it was given there: not the
    # binding spaces themselves, not a space that did not bind the export, not another export.
    direct = as_user(hub, ctrl, f"{hub.base_url}/clusters/ab-watch-b", "get", "gadgets", "-A")
    assert direct.returncode == 1 and "Forbidden" in direct.stderr
    token = yaml.safe_load(ctrl.read_text())["users"][0]["user"]["token"]
    with httpx.Client(verify=hub.ssl_context(), headers={"Authorization": f"Bearer {token}"}, timeout=10) as c:
        unbound = c.get(endpoint(hub, provider, "gadgets", "ab-serve-nowhere") + f"/apis/{GROUP}/v1/gadgets").json()
        assert unbound["code"] == 404 and "has no APIBinding" in unbound["message"]
        other = c.get(endpoint(hub, provider, "other", "*") + f"/apis/{GROUP}/v1/gadgets").json()
        assert other["code"] == 403 and 'cannot list resource "apiexports/content"' in other["message"]
        deleting = c.delete(endpoint(hub, provider, "gadgets", "ab-watch-b") +
                            f"/apis/{GROUP}/v1/namespaces/default/gadgets/second").json()
        assert deleting["code"] == 403 and 'cannot delete resource "apiexports/content"' in deleting["message"]


def test_a_schema_change_in_the_export_reaches_the_binding_spaces(hub: Hub) -> None:
    provide(hub, "ab-schema-provider", "gadgets", gadgets_crd())
    bind(hub, "ab-schema-a", "ab-schema-provider", "gadgets")
    before = hub.kubectl("apply", "-f", "-", input=gadget("painted", 1, color="red"), space="ab-schema-a",
                         check=False)
    assert before.returncode == 1 and 'unknown field "spec.color"' in before.stderr, before.stderr

    hub.kubectl("apply", "-f", "-", input=gadgets_crd(color=True), space="ab-schema-provider")
    wait_for(lambda: "The gadget's color." in hub.kubectl("explain", "gadget.spec.color", space="ab-schema-a",
                                                          check=False).stdout,
             timeout=20, message="the new field in the binding space's OpenAPI")
    hub.kubectl("apply", "-f", "-", input=gadget("painted", 1, color="red"), space="ab-schema-a")
    wrong = hub.kubectl("apply", "-f", "-", input=gadget("green", 1, color="green"), space="ab-schema-a", check=False)
    assert wrong.returncode == 1 and 'supported values: "red", "blue"' in wrong.stderr, wrong.stderr


def test_unbinding_is_refused_while_the_space_holds_objects_of_the_bound_resources(hub: Hub) -> None:
    provide(hub, "ab-unbind-provider", "gadgets", gadgets_crd())
    bind(hub, "ab-unbind-a", "ab-unbind-provider", "gadgets")
    hub.kubectl("apply", "-f", "-", input=gadget("kept", 1), space="ab-unbind-a")
    rebound = hub.kubectl("apply", "-f", "-", input=binding("gadgets", "ab-unbind-provider", "other"),
                          space="ab-unbind-a", check=False)
    assert rebound.returncode == 1 and "spec.reference is immutable" in rebound.stderr, rebound.stderr
    refused = hub.kubectl("delete", "apibinding", "gadgets", space="ab-unbind-a", check=False)
    assert refused.returncode == 1
    assert ('Error from server (Conflict): Operation cannot be fulfilled on apibindings.apis.spacehub.io "gadgets": '
            f"1 gadgets.{GROUP} still exist in this space; delete them first") in refused.stderr, refused.stderr
    assert hub.kubectl("get", "gadget", "kept", "-n", "default", "-o", "name", space="ab-unbind-a").stdout

    hub.kubectl("delete", "gadget", "kept", "-n", "default", space="ab-unbind-a")
    hub.kubectl("delete", "apibinding", "gadgets", space="ab-unbind-a")
    with hub.client() as c:
        wait_for(lambda: c.get(f"/clusters/ab-unbind-a/apis/{GROUP}/v1/gadgets").status_code == 404, timeout=10,
                 message="gadgets no longer served")


def test_a_binding_that_clashes_with_the_spaces_own_crd_is_refused_with_a_condition(hub: Hub) -> None:
    provide(hub, "ab-clash-provider", "gadgets", gadgets_crd())
    consumer = "ab-clash-own"
    hub.create_space(consumer)
    hub.kubectl("apply", "-f", "-", input=gadgets_crd(), space=consumer)  # its own definition of the same resource
    hub.kubectl("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=20s", space=consumer)
    hub.kubectl("apply", "-f", "-", input=binding("gadgets", "ab-clash-provider", "gadgets"), space=consumer)
    hub.kubectl("wait", "--for=condition=BindingConflict", "apibinding/gadgets", "--timeout=20s", space=consumer)
    clashing = kubectl_yaml(hub.kubectl("get", "apibinding", "gadgets", "-o", "yaml", space=consumer))
    ready, conflict = conditions(clashing)["Ready"], conditions(clashing)["BindingConflict"]
    assert (ready["status"], ready["reason"]) == ("False", "BindingConflict")
    assert conflict["reason"] == "NamingConflict"
    assert conflict["message"] == (f'gadgets.{GROUP} clashes with CustomResourceDefinition "gadgets.{GROUP}" of this '
                                   "space")
    assert clashing["status"]["boundResources"] == []
    hub.kubectl("apply", "-f", "-", input=gadget("own", 1), space=consumer)  # still the space's own CRD's
    assert hub.kubectl("get", "apibinding", "gadgets", space=consumer).stdout.splitlines()[1].split()[:4] == \
        ["gadgets", "root:ab-clash-provider", "gadgets", "False"]

    # The other way round: a space that binds the resource cannot define it too.
    bind(hub, "ab-clash-bound", "ab-clash-provider", "gadgets")
    refused = hub.kubectl("apply", "-f", "-", input=gadgets_crd(), space="ab-clash-bound", check=False)
    assert refused.returncode == 1 and 'APIBinding "gadgets" serves' in refused.stderr, refused.stderr
    # An export that does not exist leaves the binding waiting, saying so.
    hub.kubectl("apply", "-f", "-", input=binding("missing", "ab-clash-provider", "nothing"), space="ab-clash-bound")
    wait_for(lambda: conditions(kubectl_yaml(hub.kubectl("get", "apibinding", "missing", "-o", "yaml",
                                                         space="ab-clash-bound"))).get("Ready", {}).get("reason")
             == "ExportNotFound", timeout=20, message="ExportNotFound")


def test_binding_an_export_needs_bind_on_it_in_the_provider_space(hub: Hub, tmp_path: Path) -> None:
    provide(hub, "ab-perm-provider", "gadgets", gadgets_crd())
    hub.create_space("ab-perm-a")
    kubeconfig = tmp_path / "binder.kubeconfig"
    hub.spacehub("user", "create", "ab-binder", "--space", "ab-perm-a", "--role", "admin", "--out", str(kubeconfig))
    # An administrator of the binding space (who may write APIBindings), not yet allowed to bind the export.
    server = f"{hub.base_url}/clusters/ab-perm-a"
    manifest = binding("g", "ab-perm-provider", "gadgets")
    refused = as_user(hub, kubeconfig, server, "apply", "-f", "-", input=manifest)
    assert refused.returncode == 1 and ('User "ab-binder" cannot bind APIExport "gadgets" of space "ab-perm-provider": '
                                        'it needs "bind" on apiexports "gadgets" in space "ab-perm-provider"'
                                        ) in refused.stderr, refused.stderr

    # The provider lets everyone bind it (kcp's usual grant), without giving anyone its space.
    hub.kubectl("apply", "-f", "-", space="ab-perm-provider", input=yaml.safe_dump_all(cluster_role_grant(
        "bind-gadgets", {"apiGroups": ["apis.spacehub.io"], "resources": ["apiexports"], "resourceNames": ["gadgets"],
                         "verbs": ["bind"]}, {"kind": "Group", "name": "system:authenticated"})))
    bound = as_user(hub, kubeconfig, server, "apply", "-f", "-", input=manifest)
    assert bound.returncode == 0, bound.stderr
    hub.kubectl("wait", "--for=condition=Ready", "apibinding/g", "--timeout=20s", space="ab-perm-a")


@pytest.mark.postgres
def test_hub_processes_on_one_database_serve_the_same_bindings(pg_url: str, tmp_path: Path) -> None:
    with hub_processes(pg_url, tmp_path, 2) as (first, second):
        provide(first, "ab-multi-provider", "gadgets", gadgets_crd())
        bind(first, "ab-multi-a", "ab-multi-provider", "gadgets")
        first.kubectl("apply", "-f", "-", input=gadget("from-first", 1), space="ab-multi-a")
        # The other process serves what the binding serves, from the same stored objects.
        wait_for(lambda: second.kubectl("apply", "-f", "-", input=gadget("from-second", 2), space="ab-multi-a",
                                        check=False).returncode == 0, timeout=20, message="gadgets served by the other")
        with second.client() as c:
            listed = c.get(f"/services/apiexport/ab-multi-provider/gadgets/clusters/*/apis/{GROUP}/v1/gadgets").json()
        assert sorted(g["metadata"]["name"] for g in listed["items"]) == ["from-first", "from-second"]
        refused = second.kubectl("delete", "apibinding", "gadgets", space="ab-multi-a", check=False)
        assert refused.returncode == 1 and "2 gadgets.gadgets.provider.example still exist" in refused.stderr


def test_a_bound_apis_objects_are_placed_on_clusters_with_the_providers_crd(tmp_path: Path) -> None:
    world = World(tmp_path, clusters=1).start()
    try:
        world.join("florin", "wec1", {"env": "prod"})
        provide(world.hub, "ab-place-provider", "gadgets", gadgets_crd())
        bind(world.hub, "ab-place-consumer", "ab-place-provider", "gadgets")
        world.hub.kubectl("apply", "-f", "-", input=gadget("placed", 2), space="ab-place-consumer")
        spec = placement("gadgets", {"env": "prod"}, [{"apiGroup": GROUP, "resources": ["gadgets"],
                                                       "namespaces": ["default"]}])
        spec["spec"]["crdFollow"] = True  # the space has no CRD of its own: the provider's goes along
        world.apply("ab-place-consumer", spec)
        crd = world.wait_present("wec1", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{GROUP}")
        assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "x-kubernetes-validations"][0]["rule"] == "self.size <= self.limit"
        placed = world.wait_present("wec1", f"/apis/{GROUP}/v1/namespaces/default/gadgets/placed")
        assert placed["spec"] == {"size": 2, "limit": 10}
        status = world.hub_get("ab-place-consumer", "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/gadgets")
        assert status is not None
        assert not (status.get("status") or {}).get("missingCRDs") and \
            not (status.get("status") or {}).get("unservedResources")
    finally:
        world.close()
