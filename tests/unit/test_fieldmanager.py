"""managedFields for Update operations and the FieldsV1 field-set type."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from apiserver.definitions import load_definitions
from apiserver.fieldmanager import (
    FieldSet,
    PathElement,
    compare,
    fields_of,
    format_path,
)
from apiserver.managedfields import update_managed_fields

DEFS = load_definitions()
DEPLOYMENT = DEFS["io.k8s.api.apps.v1.Deployment"]
CONFIGMAP = DEFS["io.k8s.api.core.v1.ConfigMap"]
T0, T1, T2, T3 = (f"2024-01-01T00:00:0{i}Z" for i in range(4))
NGINX = 'k:{"name":"nginx"}'


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "nginx", "image": "nginx:1.25",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "info"}],
                    "resources": {},
                }], "restartPolicy": "Always"},
            },
        },
        "status": {},
    }


def create(obj: dict[str, Any], manager: str, schema: dict | None = DEPLOYMENT) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    update_managed_fields(None, new, manager, "apps/v1", T0, schema, DEFS)
    # What the handler adds once stored; none of it is ever owned.
    new["metadata"].update(uid="u-1", resourceVersion="1", generation=1, creationTimestamp=T0)
    return new


def update(old: dict[str, Any], mutate: Any, manager: str, now: str, subresource: str = "",
           schema: dict | None = DEPLOYMENT, send_managed: bool = True) -> dict[str, Any]:
    new = copy.deepcopy(old)
    if not send_managed:
        new["metadata"].pop("managedFields", None)
    mutate(new)
    update_managed_fields(old, new, manager, "apps/v1", now, schema, DEFS, subresource)
    return new


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    found = [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


def managers(obj: dict[str, Any]) -> list[str]:
    return [e["manager"] for e in obj["metadata"].get("managedFields", [])]


def owns(obj: dict[str, Any], manager: str, *path: str) -> bool:
    fields = FieldSet.from_fields_v1(entry(obj, manager)["fieldsV1"])
    return tuple(PathElement.parse(p) for p in path) in fields


CONTAINER = ("f:spec", "f:template", "f:spec", "f:containers", NGINX)


# -- create -------------------------------------------------------------------------------------

def test_create_records_one_update_entry() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl-client-side-apply",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {
                "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                "f:labels": {".": {}, "f:app": {}},
            },
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:strategy": {
                    "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                    "f:type": {},
                },
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {
                            NGINX: {
                                ".": {},
                                "f:env": {
                                    ".": {},
                                    'k:{"name":"LEVEL"}': {".": {}, "f:name": {}, "f:value": {}},
                                    'k:{"name":"MODE"}': {".": {}, "f:name": {}, "f:value": {}},
                                },
                                "f:image": {},
                                "f:name": {},
                                "f:ports": {
                                    ".": {},
                                    'k:{"containerPort":80,"protocol":"TCP"}': {
                                        ".": {}, "f:containerPort": {}, "f:protocol": {},
                                    },
                                },
                                "f:resources": {},
                            },
                        },
                        "f:restartPolicy": {},
                    },
                },
            },
        },
    }]
    # Key order is the serialisation order structured-merge-diff uses.
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]
    assert list(fields["f:spec"]) == ["f:replicas", "f:selector", "f:strategy", "f:template"]
    assert next(iter(fields["f:spec"]["f:template"]["f:spec"]["f:containers"][NGINX])) == "."


def test_create_keeps_managed_fields_sent_by_the_client() -> None:
    sent = deployment()
    sent["metadata"]["managedFields"] = [{
        "manager": "restore", "operation": "Update", "apiVersion": "apps/v1", "time": "2020-01-01T00:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}},
    }]
    obj = create(sent, "kubectl-create")
    assert managers(obj) == ["restore", "kubectl-create"]


def test_empty_manager_is_unknown_and_port_protocol_defaults() -> None:
    d = deployment()
    del d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"]
    obj = create(d, "")
    assert owns(obj, "unknown", *CONTAINER, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}',
                "f:containerPort")


# -- updates ------------------------------------------------------------------------------------

def test_label_update_owns_only_the_label() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    before = entry(obj, "kubectl-client-side-apply")
    obj = update(obj, lambda o: o["metadata"]["labels"].update(tier="front"), "kubectl-label", T1)
    assert entry(obj, "kubectl-label")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    assert entry(obj, "kubectl-label")["time"] == T1
    assert entry(obj, "kubectl-client-side-apply") == before
    assert managers(obj) == ["kubectl-client-side-apply", "kubectl-label"]


def test_changing_a_field_moves_ownership() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def new_image(o: dict[str, Any]) -> None:
        o["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"

    obj = update(obj, new_image, "kubectl-edit", T1)
    assert owns(obj, "kubectl-edit", *CONTAINER, "f:image")
    assert not owns(obj, "kubectl-client-side-apply", *CONTAINER, "f:image")
    assert owns(obj, "kubectl-client-side-apply", *CONTAINER, "f:name")
    assert entry(obj, "kubectl-edit")["fieldsV1"] == {
        "f:spec": {"f:template": {"f:spec": {"f:containers": {NGINX: {"f:image": {}}}}}}}
    # The previous owner keeps its time: only the writer's entry is stamped.
    assert entry(obj, "kubectl-client-side-apply")["time"] == T0


def test_removing_fields_drops_them_and_empty_entries() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    obj = update(obj, lambda o: o["metadata"]["labels"].update(tier="front"), "kubectl-label", T1)

    def drop(o: dict[str, Any]) -> None:
        del o["metadata"]["labels"]["tier"]
        o["spec"]["template"]["spec"]["containers"][0]["env"].pop(0)  # MODE

    obj = update(obj, drop, "kubectl-edit", T2)
    assert managers(obj) == ["kubectl-client-side-apply"]  # kubectl-label owned nothing else; nothing gained
    env = ("f:spec", "f:template", "f:spec", "f:containers", NGINX, "f:env")
    assert not owns(obj, "kubectl-client-side-apply", *env, 'k:{"name":"MODE"}')
    assert not owns(obj, "kubectl-client-side-apply", *env, 'k:{"name":"MODE"}', "f:value")
    assert owns(obj, "kubectl-client-side-apply", *env, 'k:{"name":"LEVEL"}', "f:value")


def test_same_manager_keeps_one_entry() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    obj = update(obj, lambda o: o["spec"].update(replicas=3), "kubectl-client-side-apply", T1)
    obj = update(obj, lambda o: o["spec"].update(paused=True), "kubectl-client-side-apply", T2)
    assert managers(obj) == ["kubectl-client-side-apply"]
    assert entry(obj, "kubectl-client-side-apply")["time"] == T2
    assert owns(obj, "kubectl-client-side-apply", "f:spec", "f:paused")
    assert owns(obj, "kubectl-client-side-apply", "f:spec", "f:replicas")


def test_noop_update_changes_nothing() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    again = update(obj, lambda o: None, "someone-else", T1)
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_server_fields_are_never_owned() -> None:
    obj = create(deployment(), "a")

    def touch(o: dict[str, Any]) -> None:
        o["metadata"].update(resourceVersion="9", generation=4, uid="other", name="renamed")

    obj = update(obj, touch, "b", T1)
    assert managers(obj) == ["a"]
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]
    assert set(fields) == {"f:annotations", "f:labels"}


# -- where the base managedFields come from ------------------------------------------------------

def test_managed_fields_omitted_by_the_client_come_from_the_live_object() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")
    obj = update(obj, lambda o: o["spec"].update(replicas=5), "scaler", T1, send_managed=False)
    assert managers(obj) == ["kubectl-client-side-apply", "scaler"]
    assert not owns(obj, "kubectl-client-side-apply", "f:spec", "f:replicas")


@pytest.mark.parametrize("reset", [[], [{}]])
def test_reset_clears_and_stops_tracking(reset: list[Any]) -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def clear(o: dict[str, Any]) -> None:
        o["metadata"]["managedFields"] = reset
        o["spec"]["replicas"] = 9

    obj = update(obj, clear, "kubectl-edit", T1)
    assert "managedFields" not in obj["metadata"]
    # An object without managedFields stays untracked on later updates.
    obj = update(obj, lambda o: o["spec"].update(replicas=1), "x", T2)
    assert "managedFields" not in obj["metadata"]


def test_client_may_edit_managed_fields() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def rename(o: dict[str, Any]) -> None:
        o["metadata"]["managedFields"][0]["manager"] = "renamed"

    obj = update(obj, rename, "kubectl-edit", T1)
    assert managers(obj) == ["renamed"]


def test_invalid_managed_fields_fall_back_to_live() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def garbage(o: dict[str, Any]) -> None:
        o["metadata"]["managedFields"] = [{"manager": "x", "operation": "Patch", "apiVersion": "v1"}]

    obj = update(obj, garbage, "kubectl-edit", T1)
    assert managers(obj) == ["kubectl-client-side-apply"]


def test_untrackable_object_keeps_live_managed_fields() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def keyless(o: dict[str, Any]) -> None:
        o["spec"]["template"]["spec"]["containers"].append({"image": "sidecar"})  # no name

    new = update(obj, keyless, "kubectl-edit", T1, send_managed=False)
    assert new["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


# -- status -------------------------------------------------------------------------------------

def test_status_is_owned_only_through_the_status_subresource() -> None:
    obj = create(deployment(), "kubectl-client-side-apply")

    def status_and_spec(o: dict[str, Any]) -> None:
        o["status"] = {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
        o["spec"]["replicas"] = 4

    via_status = update(obj, status_and_spec, "kube-controller-manager", T1, subresource="status")
    e = entry(via_status, "kube-controller-manager")
    assert e["subresource"] == "status"
    assert e["fieldsV1"] == {"f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
        "f:replicas": {}}}
    assert owns(via_status, "kubectl-client-side-apply", "f:spec", "f:replicas")

    via_main = update(obj, status_and_spec, "editor", T1)
    assert entry(via_main, "editor")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "subresource" not in entry(via_main, "editor")


def test_status_subresource_entries_are_separate() -> None:
    obj = create(deployment(), "ctrl")
    obj = update(obj, lambda o: o["status"].update(replicas=1), "ctrl", T1, subresource="status")
    assert [(e["manager"], e.get("subresource")) for e in obj["metadata"]["managedFields"]] == [
        ("ctrl", None), ("ctrl", "status")]


def test_custom_resources_without_status_subresource_own_status() -> None:
    cr = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
          "spec": {"size": 1, "tags": ["a"]}, "status": {"ok": True}}
    new = copy.deepcopy(cr)
    update_managed_fields(None, new, "m", "example.com/v1", T0, None, DEFS, status_subresource=False)
    assert new["metadata"]["managedFields"][0]["fieldsV1"] == {
        # No zero value for custom resources: spec is created by the write; untyped lists are atomic.
        "f:spec": {".": {}, "f:size": {}, "f:tags": {}},
        "f:status": {".": {}, "f:ok": {}},
    }


def test_custom_resource_schema_list_types_and_typed_metadata() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                              "port": {"type": "integer"}}}},
        "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
    }}}}
    cr = {"apiVersion": "example.com/v1", "kind": "Route",
          "metadata": {"name": "r", "finalizers": ["example.com/cleanup"]},
          "spec": {"routes": [{"name": "a", "port": 1}], "hosts": ["x.example"], "args": ["-v"]}}
    new = copy.deepcopy(cr)
    update_managed_fields(None, new, "m", "example.com/v1", T0, schema, DEFS)
    assert new["metadata"]["managedFields"][0]["fieldsV1"] == {
        # metadata is typed as ObjectMeta even though the CRD schema leaves it out.
        "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/cleanup"': {}}},
        "f:spec": {
            ".": {},
            "f:args": {},
            "f:hosts": {".": {}, 'v:"x.example"': {}},
            "f:routes": {".": {}, 'k:{"name":"a"}': {".": {}, "f:name": {}, "f:port": {}}},
        },
    }


# -- capping --------------------------------------------------------------------------------------

def test_update_managers_are_capped() -> None:
    obj = create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k0": "v"}},
                 "m00", CONFIGMAP)
    for i in range(1, 12):
        obj = update(obj, lambda o, i=i: o["data"].update({f"k{i}": "v"}), f"m{i:02d}",
                     f"2024-01-01T00:00:{i:02d}Z", schema=CONFIGMAP)
    names = managers(obj)
    assert len(names) == 10
    assert "ancient-changes" in names and "m00" not in names and "m01" not in names and "m02" not in names
    assert owns(obj, "ancient-changes", "f:data", "f:k0")
    assert owns(obj, "ancient-changes", "f:data", "f:k2")


# -- FieldSet -------------------------------------------------------------------------------------

SAMPLE_FIELDS_V1 = {
    "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/a"': {}}, "f:labels": {".": {}, "f:app": {}}},
    "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}, "f:type": {}},
}


def test_fields_v1_round_trip() -> None:
    fs = FieldSet.from_fields_v1(SAMPLE_FIELDS_V1)
    assert fs.to_fields_v1() == SAMPLE_FIELDS_V1
    assert json.dumps(fs.to_fields_v1()) == json.dumps(SAMPLE_FIELDS_V1)
    again = FieldSet.from_fields_v1(json.loads(json.dumps(fs.to_fields_v1())))
    assert again == fs and hash(again) == hash(fs)


def test_fields_v1_is_canonicalised() -> None:
    messy = {"f:spec": {"f:type": {}, "f:ports": {'k:{"protocol":"TCP", "port":80.0}': {}}}, "x:unknown": {}}
    assert FieldSet.from_fields_v1(messy).to_fields_v1() == {
        "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {}}, "f:type": {}}}


@pytest.mark.parametrize("bad", [{"fx": {}}, {"k:[1]": {}}, {"f:a": 1}, {"i:x": {}}])
def test_malformed_fields_v1(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FieldSet.from_fields_v1(bad)


def test_set_operations_and_leaves() -> None:
    fs = FieldSet.from_fields_v1(SAMPLE_FIELDS_V1)
    labels = FieldSet.from_fields_v1({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    assert fs & labels == labels
    assert (fs - labels) | labels == fs
    assert (fs - fs).empty and not fs.empty
    assert [format_path(p) for p in fs.leaves()] == [
        '.metadata.finalizers[="example.com/a"]', ".metadata.labels.app",
        '.spec.ports[port=80,protocol="TCP"].port', ".spec.type"]
    assert (fs.recursive_difference(FieldSet([(PathElement.field("metadata"),)]))
            == fs.under((PathElement.field("spec"),)))


def test_fields_of_and_compare() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "b"},
                                                                "finalizers": ["x"]}, "data": {"k": "v"}}
    assert fields_of(cm, CONFIGMAP, DEFS).to_fields_v1() == {
        "f:apiVersion": {}, "f:data": {".": {}, "f:k": {}}, "f:kind": {},
        "f:metadata": {"f:finalizers": {".": {}, 'v:"x"': {}}, "f:labels": {".": {}, "f:a": {}},
                       "f:name": {}},
    }
    changed = copy.deepcopy(cm)
    changed["data"] = {"k": "w", "n": "1"}
    del changed["metadata"]["labels"]
    diff = compare(cm, changed, CONFIGMAP, DEFS)
    assert [format_path(p) for p in diff.added] == [".data.n"]
    assert [format_path(p) for p in diff.modified] == [".data.k"]
    assert [format_path(p) for p in diff.removed] == [".metadata.labels", ".metadata.labels.a"]
