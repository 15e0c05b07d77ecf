"""Custom resources in a space: CRDs are served like on a real cluster, with schemas and CEL rules."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tests.harness import Hub, kubectl_yaml, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
DIGEST = "sha256:" + "a" * 64


def install_widgets(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", "--timeout=10s",
                space=space)


def widget(name: str, **spec: Any) -> str:
    body = {"image": f"registry.example/w@{DIGEST}", "owner": "team-a", **spec}
    return yaml.safe_dump({"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
                           "metadata": {"name": name, "namespace": "default"}, "spec": body})


def test_a_crd_is_served_within_a_second_with_its_names_and_columns(hub: Hub, space: str) -> None:
    started = time.monotonic()
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    with hub.client() as c:
        def established() -> bool:
            crd = c.get(f"/clusters/{space}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                        "widgets.example.spacehub.io").json()
            conditions = {x["type"]: x["status"] for x in crd.get("status", {}).get("conditions", [])}
            return conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"

        wait_for(established, timeout=5, message="CRD established")
        wait_for(lambda: c.get(f"/clusters/{space}/apis/example.spacehub.io/v1/namespaces/default/widgets")
                 .status_code == 200, timeout=5, message="widgets served")
    assert time.monotonic() - started < 3
    resources = hub.kubectl("api-resources", "--api-group=example.spacehub.io", space=space).stdout
    assert "widgets" in resources and "wd" in resources
    hub.kubectl("apply", "-f", "-", space=space, input=widget("w1", replicas=2))
    table = hub.kubectl("get", "wd", "-n", "default", space=space).stdout
    header = table.splitlines()[0].split()
    assert header == ["NAME", "REPLICAS", "IMAGE", "READY", "AGE"]
    assert table.splitlines()[1].split()[:3] == ["w1", "2", f"registry.example/w@{DIGEST}"]
    wide = hub.kubectl("get", "widgets", "-n", "default", "-o", "wide", space=space).stdout
    assert "MODE" in wide.splitlines()[0] and "safe" in wide
    assert "widget.example.spacehub.io/w1" in hub.kubectl("get", "all", "-n", "default", space=space).stdout
    explained = hub.kubectl("explain", "widget.spec", space=space).stdout
    assert "What the widget should run." in explained and "pinned by digest" in explained


def test_schema_defaults_pruning_and_validation_messages(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    hub.kubectl("apply", "-f", "-", space=space, input=widget("defaults"))
    live = kubectl_yaml(hub.kubectl("get", "widget", "defaults", "-n", "default", "-o", "yaml", space=space))
    assert live["spec"]["replicas"] == 1 and live["spec"]["mode"] == "safe"
    assert live["metadata"]["generation"] == 1

    def rejected(manifest: str) -> str:
        out = hub.kubectl("apply", "-f", "-", space=space, input=manifest, check=False)
        assert out.returncode != 0, out.stdout
        return out.stderr

    assert 'unknown field "spec.bogus"' in rejected(widget("unknown", bogus=1))
    assert "images must be pinned by digest" in rejected(widget("unpinned").replace(f"@{DIGEST}", ":latest"))
    assert "should be less than or equal to 100" in rejected(widget("many", replicas=1000))
    assert 'supported values: "fast", "safe"' in rejected(widget("mode", mode="turbo"))
    assert "should match '^[a-f0-9]{64}$'" in rejected(widget("sum", checksum="abc"))
    assert "owner Team_A is not a valid DNS label" in rejected(widget("owner", owner="Team_A"))
    fast = rejected(widget("fast", mode="fast", replicas=50))
    assert "fast widgets run at most 10 replicas" in fast and "spec.replicas" in fast
    assert "spec.owner: Required value" in rejected(yaml.safe_dump({
        "apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "x", "namespace": "default"},
        "spec": {"image": f"a@{DIGEST}"}}))


def test_transition_rules_apply_on_update_only(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    hub.kubectl("apply", "-f", "-", space=space, input=widget("flavored", flavor="vanilla"))
    out = hub.kubectl("apply", "-f", "-", space=space, input=widget("flavored", flavor="chocolate"), check=False)
    assert out.returncode != 0 and "flavor is immutable" in out.stderr
    hub.kubectl("apply", "-f", "-", space=space, input=widget("flavored", flavor="vanilla", replicas=3))


def test_scale_subresource_and_status(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    hub.kubectl("apply", "-f", "-", space=space, input=widget("scaled"))
    hub.kubectl("scale", "widget/scaled", "-n", "default", "--replicas=4", space=space)
    live = kubectl_yaml(hub.kubectl("get", "widget", "scaled", "-n", "default", "-o", "yaml", space=space))
    assert live["spec"]["replicas"] == 4
    url = f"/clusters/{space}/apis/example.spacehub.io/v1/namespaces/default/widgets/scaled"
    with hub.client() as c:
        status = {"status": {"replicas": 4, "selector": "app=scaled",
                             "conditions": [{"type": "Ready", "status": "True"}]}}
        r = c.patch(f"{url}/status", content=json.dumps(status),
                    headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
        scale = c.get(f"{url}/scale").json()
        assert scale["spec"]["replicas"] == 4 and scale["status"] == {"replicas": 4, "selector": "app=scaled"}
        ignored = c.patch(url, content=json.dumps({"status": {"replicas": 99}}),
                          headers={"Content-Type": "application/merge-patch+json"}).json()
        assert ignored["status"]["replicas"] == 4
    assert hub.kubectl("get", "widget", "scaled", "-n", "default", space=space).stdout.split()[-2] == "True"


def test_several_versions_share_storage(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    hub.kubectl("apply", "-f", "-", space=space, input=widget("versions"))
    beta = kubectl_yaml(hub.kubectl("get", "widgets.v1beta1.example.spacehub.io", "versions", "-n", "default",
                                    "-o", "yaml", space=space))
    assert beta["apiVersion"] == "example.spacehub.io/v1beta1"
    assert beta["spec"]["owner"] == "team-a"
    with hub.client() as c:
        r = c.get(f"/clusters/{space}/apis/example.spacehub.io/v1/namespaces/default/widgets/versions")
        assert r.json()["apiVersion"] == "example.spacehub.io/v1"


def test_conflicting_names_are_not_accepted(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    clash = yaml.safe_load((FIXTURES / "widgets.yaml").read_text())
    clash["metadata"]["name"] = "gizmos.example.spacehub.io"
    clash["spec"]["names"] = {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo", "shortNames": ["wd"]}
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(clash))
    with hub.client() as c:
        def names_rejected() -> dict[str, Any] | None:
            crd = c.get(f"/clusters/{space}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                        "gizmos.example.spacehub.io").json()
            conds = {x["type"]: x for x in crd.get("status", {}).get("conditions", [])}
            return conds.get("NamesAccepted") if conds.get("NamesAccepted", {}).get("status") == "False" else None

        condition = wait_for(names_rejected, timeout=5, message="NamesAccepted=False")
        assert '"wd" is already in use' in condition["message"]
        r = c.get(f"/clusters/{space}/apis/example.spacehub.io/v1/gizmos")
        assert r.status_code == 404


def test_deleting_a_crd_deletes_its_objects(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    for i in range(3):
        hub.kubectl("apply", "-f", "-", space=space, input=widget(f"doomed-{i}"))
    hub.kubectl("delete", "crd", "widgets.example.spacehub.io", "--timeout=30s", space=space)
    install_widgets(hub, space)
    assert hub.kubectl("get", "widgets", "-A", "-o", "name", space=space).stdout == ""


def _heavy_crd(name: str, max_items: int | None) -> str:
    crd = yaml.safe_load((FIXTURES / "widgets.yaml").read_text())
    crd["metadata"]["name"] = f"{name}.example.spacehub.io"
    crd["spec"]["names"] = {"kind": name.capitalize()[:-1], "plural": name, "singular": name[:-1]}
    crd["spec"]["versions"] = [crd["spec"]["versions"][0]]
    items: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 8},
                             "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, a != b || size(a) > 0))",
                                                           "message": "never"}]}
    if max_items is not None:
        items["maxItems"] = max_items
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["items"] = items
    return yaml.safe_dump(crd)


def test_a_rule_with_unbounded_cost_is_refused_when_the_crd_is_created(hub: Hub, space: str) -> None:
    out = hub.kubectl("apply", "-f", "-", space=space, input=_heavy_crd("unboundeds", None), check=False)
    assert out.returncode != 0
    assert "estimated rule cost exceeds budget" in out.stderr


def test_an_expensive_rule_is_cut_off_and_other_requests_keep_being_served(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", "-", space=space, input=_heavy_crd("heavies", 800))
    hub.kubectl("wait", "--for=condition=Established", "crd/heavies.example.spacehub.io", "--timeout=10s",
                space=space)
    served: list[float] = []
    stop = threading.Event()

    def keep_asking() -> None:
        with hub.client() as c:
            while not stop.is_set():
                t = time.monotonic()
                assert c.get(f"/clusters/{space}/api/v1/namespaces/default/configmaps").status_code == 200
                served.append(time.monotonic() - t)

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        heavy = {"apiVersion": "example.spacehub.io/v1", "kind": "Heavie",
                 "metadata": {"name": "h", "namespace": "default"},
                 "spec": {"image": f"a@{DIGEST}", "owner": "o", "items": [str(i) for i in range(800)]}}
        with hub.client(timeout=60) as c:
            for _ in range(3):
                r = c.post(f"/clusters/{space}/apis/example.spacehub.io/v1/namespaces/default/heavies", json=heavy)
                assert r.status_code == 422, r.text
                assert "cost limit exceeded" in r.text
    finally:
        stop.set()
        asker.join()
    assert len(served) >= 3 and max(served) < 2


def _shaped_crd(plural: str, spec_schema: dict[str, Any]) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.spacehub.io"},
        "spec": {"group": "example.spacehub.io", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].capitalize()},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": spec_schema}}}}]}})


def test_real_world_rule_shapes_are_accepted_as_kube_apiserver_accepts_them(hub: Hub, space: str) -> None:
    """Gateway API's rules over a bounded map's keys and values, and prometheus-operator's has() two unbounded
    lists deep: refused by an estimate that multiplied nested sizes, accepted by upstream's (and ours now)."""
    annotations = {"type": "object", "maxProperties": 8,
                   "additionalProperties": {"type": "string", "maxLength": 4096},
                   "x-kubernetes-validations": [
                       {"rule": "self.all(key, key.matches('^([a-z0-9.-]+/)?[A-Za-z0-9._-]+$'))",
                        "message": "keys must be qualified names"},
                       {"rule": "self.all(key, self[key].size() <= 4096)"}]}
    gateway = {"type": "object", "properties": {"infrastructure": {"type": "object", "properties": {
        "annotations": annotations, "labels": annotations}}}}
    receiver = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "has(self.name)"}]}
    routes = {"type": "object", "properties": {"routes": {"type": "array", "items": {
        "type": "object", "properties": {"receivers": {"type": "array", "items": receiver}}}}}}
    for plural, schema in (("gateways", gateway), ("routers", routes)):
        hub.kubectl("apply", "-f", "-", space=space, input=_shaped_crd(plural, schema))
        hub.kubectl("wait", "--for=condition=Established", f"crd/{plural}.example.spacehub.io", "--timeout=10s",
                    space=space)
    bad = {"apiVersion": "example.spacehub.io/v1", "kind": "Gateway", "metadata": {"name": "g", "namespace": "default"},
           "spec": {"infrastructure": {"annotations": {"Not A Key": "x"}}}}
    out = hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(bad), check=False)
    assert out.returncode != 0 and "keys must be qualified names" in out.stderr

    # An unbounded list of unbounded strings matched by a regex stays refused, with upstream's words.
    names = {"type": "array", "items": {"type": "string"},
             "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]}
    out = hub.kubectl("apply", "-f", "-", space=space, check=False,
                      input=_shaped_crd("lists", {"type": "object", "properties": {"names": names}}))
    assert out.returncode != 0
    assert "estimated rule cost exceeds budget by factor of more than 100x" in out.stderr
