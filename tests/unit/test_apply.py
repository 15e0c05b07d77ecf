"""Server-side apply: merge, conflicts, pruning and managedFields, and kubectl's CSA -> SSA upgrade."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from apimachinery.errors import Cause, StatusError
from apiserver.apply import server_side_apply
from apiserver.definitions import load_definitions
from apiserver.fieldmanager import FieldSet, PathElement, go_json
from apiserver.managedfields import update_managed_fields
from apiserver.patching.json_patch import apply_json_patch
from apiserver.ssa.lastapplied import LAST_APPLIED

DEFS = load_definitions()
DEPLOYMENT = DEFS["io.k8s.api.apps.v1.Deployment"]
T0, T1, T2, T3, T4 = (f"2024-01-01T00:00:0{i}Z" for i in range(5))
NGINX = 'k:{"name":"nginx"}'
CONTAINERS = ("f:spec", "f:template", "f:spec", "f:containers")


def manifest(**spec: Any) -> dict[str, Any]:
    """A complete Deployment configuration; ``spec`` overrides top-level spec fields."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                         "ports": [{"containerPort": 80}]}]},
            },
        },
    }
    obj["spec"].update(spec)
    return obj


def partial(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """An apply configuration naming the same Deployment with only the given fields."""
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "default", **meta}}
    if spec is not None:
        obj["spec"] = spec
    return obj


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"template": {"spec": {"containers": list(items)}}}


def apply(live: dict[str, Any] | None, applied: dict[str, Any], manager: str, now: str, *, force: bool = False,
          schema: dict[str, Any] | None = DEPLOYMENT, api_version: str = "apps/v1",
          status_subresource: bool = True, subresource: str = "") -> dict[str, Any]:
    before = copy.deepcopy((live, applied))
    out = server_side_apply(live, applied, manager=manager, force=force, api_version=api_version, now=now,
                            schema=schema, defs=DEFS, status_subresource=status_subresource,
                            subresource=subresource)
    assert (live, applied) == before, "the arguments must not be modified"
    if live is None:
        # What the create handler adds; none of it is ever owned.
        out["metadata"].update(uid="u-1", resourceVersion="1", generation=1, creationTimestamp=T0)
    return out


def update(old: dict[str, Any], mutate: Any, manager: str, now: str) -> dict[str, Any]:
    """A non-apply write (kubectl edit, client-side apply, a controller)."""
    new = copy.deepcopy(old)
    mutate(new)
    update_managed_fields(old, new, manager, "apps/v1", now, DEPLOYMENT, DEFS)
    return new


def conflict(live: dict[str, Any], applied: dict[str, Any], manager: str, **kw: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        apply(live, applied, manager, T4, **kw)
    assert (info.value.code, info.value.reason) == (409, "Conflict")
    return info.value


def entry(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    found = [e for e in obj["metadata"].get("managedFields", [])
             if e["manager"] == manager and e["operation"] == operation]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def owns(obj: dict[str, Any], manager: str, *path: str, operation: str = "Apply") -> bool:
    fields = FieldSet.from_fields_v1(entry(obj, manager, operation)["fieldsV1"])
    return tuple(PathElement.parse(p) for p in path) in fields


def nginx(obj: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == "nginx")


# -- create and no-op ----------------------------------------------------------------------------

def test_create_by_apply_owns_exactly_the_applied_fields() -> None:
    obj = apply(None, manifest(), "deployer", T0)
    assert obj["metadata"]["managedFields"] == [{
        "manager": "deployer",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            # Struct fields are implied by their members: no "." except for list items.
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},  # an atomic map
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {NGINX: {
                        ".": {}, "f:image": {}, "f:name": {},
                        # The protocol key defaults to TCP.
                        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                    }}},
                },
            },
        },
    }]
    body = dict(obj)
    body["metadata"] = {k: v for k, v in obj["metadata"].items()
                        if k not in ("managedFields", "uid", "resourceVersion", "generation", "creationTimestamp")}
    assert body == manifest()


def test_reapplying_the_same_configuration_is_a_no_op() -> None:
    obj = apply(None, manifest(), "deployer", T0)
    assert apply(obj, manifest(), "deployer", T1) == obj  # the entry keeps its time


def test_reapplying_a_change_restamps_the_entry() -> None:
    obj = apply(None, manifest(), "deployer", T0)
    obj = apply(obj, manifest(replicas=3), "deployer", T1)
    assert obj["spec"]["replicas"] == 3
    assert entry(obj, "deployer")["time"] == T1
    assert obj["metadata"]["uid"] == "u-1"  # the server's fields survive


# -- conflicts and shared ownership --------------------------------------------------------------

def test_applying_a_different_value_conflicts_with_the_other_applier() -> None:
    obj = apply(None, manifest(), "a", T0)
    err = conflict(obj, partial({"replicas": 3}), "b")
    assert err.message == 'Apply failed with 1 conflict: conflict with "a": .spec.replicas'
    assert err.causes == [Cause("FieldManagerConflict", 'conflict with "a"', ".spec.replicas")]
    assert err.to_status()["details"] == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "a"', "field": ".spec.replicas"}]}


def test_conflicts_with_updaters_name_their_version() -> None:
    obj = apply(None, manifest(), "a", T0)
    obj = update(obj, lambda o: o["spec"].update(replicas=5), "kubectl-edit", T1)
    err = conflict(obj, manifest(), "a")
    assert err.message == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas'
    assert err.causes == [Cause("FieldManagerConflict", 'conflict with "kubectl-edit" using apps/v1',
                                ".spec.replicas")]


def test_several_conflicts_are_grouped_by_manager() -> None:
    obj = apply(None, manifest(), "a", T0)
    obj = update(obj, lambda o: o["metadata"].setdefault("annotations", {}).update(note="x"), "editor", T1)
    change = partial({"replicas": 3, **containers({"name": "nginx", "image": "nginx:1.27"})},
                     annotations={"note": "y"})
    err = conflict(obj, change, "b")
    image = '.spec.template.spec.containers[name="nginx"].image'
    assert err.message == ("Apply failed with 3 conflicts: "
                           'conflicts with "a":\n- .spec.replicas\n- ' + image + "\n"
                           'conflicts with "editor" using apps/v1:\n- .metadata.annotations.note')
    assert [(c.message, c.field) for c in err.causes] == [
        ('conflict with "a"', ".spec.replicas"),
        ('conflict with "a"', image),
        ('conflict with "editor" using apps/v1', ".metadata.annotations.note"),
    ]


def test_applying_the_same_value_shares_ownership() -> None:
    obj = apply(None, manifest(), "a", T0)
    shared = apply(obj, partial({"replicas": 2}), "b", T1)
    assert owns(shared, "a", "f:spec", "f:replicas") and owns(shared, "b", "f:spec", "f:replicas")
    assert {k: v for k, v in shared.items() if k != "metadata"} == {k: v for k, v in obj.items() if k != "metadata"}
    # Upstream stamps an Apply entry only when the object changed.
    assert "time" not in entry(shared, "b")
    assert managers(shared) == [("b", "Apply"), ("a", "Apply")]


def test_force_takes_ownership_from_the_other_managers() -> None:
    obj = apply(None, manifest(), "a", T0)
    obj = update(obj, lambda o: o["metadata"].setdefault("annotations", {}).update(note="x"), "editor", T1)
    forced = apply(obj, partial({"replicas": 3}, annotations={"note": "y"}), "b", T2, force=True)
    assert forced["spec"]["replicas"] == 3
    assert forced["metadata"]["annotations"] == {"note": "y"}
    assert owns(forced, "b", "f:spec", "f:replicas")
    assert not owns(forced, "a", "f:spec", "f:replicas")
    assert owns(forced, "a", "f:spec", "f:selector")
    assert not owns(forced, "editor", "f:metadata", "f:annotations", "f:note", operation="Update")
    # The editor keeps the annotations map it created (the "." of its entry).
    assert entry(forced, "editor", "Update")["fieldsV1"] == {"f:metadata": {"f:annotations": {}}}


# -- removal of fields no longer applied ----------------------------------------------------------

def test_a_field_dropped_from_the_configuration_is_removed() -> None:
    config = manifest(strategy={"type": "Recreate"})
    config["metadata"]["labels"]["tier"] = "frontend"
    obj = apply(None, config, "a", T0)
    obj = apply(obj, manifest(), "a", T1)
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert "strategy" not in obj["spec"]
    assert not owns(obj, "a", "f:metadata", "f:labels", "f:tier")


def test_a_dropped_field_that_someone_else_owns_stays() -> None:
    obj = apply(None, manifest(), "a", T0)
    obj = apply(obj, partial({"replicas": 2}), "b", T1)
    without_replicas = manifest()
    del without_replicas["spec"]["replicas"]
    obj = apply(obj, without_replicas, "a", T2)
    assert obj["spec"]["replicas"] == 2
    assert owns(obj, "b", "f:spec", "f:replicas") and not owns(obj, "a", "f:spec", "f:replicas")


def test_a_dropped_field_that_an_updater_owns_stays() -> None:
    config = manifest()
    config["metadata"]["annotations"] = {"note": "x"}
    obj = update(apply(None, manifest(), "a", T0),
                 lambda o: o["metadata"].setdefault("annotations", {}).update(note="x"), "editor", T1)
    obj = apply(obj, config, "a", T2)
    assert owns(obj, "a", "f:metadata", "f:annotations", "f:note")
    obj = apply(obj, manifest(), "a", T3)
    assert obj["metadata"]["annotations"] == {"note": "x"}
    assert owns(obj, "editor", "f:metadata", "f:annotations", "f:note", operation="Update")


def test_pruning_keeps_unowned_siblings() -> None:
    config = manifest()
    config["metadata"]["labels"]["tier"] = "frontend"
    obj = apply(None, config, "a", T0)
    obj["metadata"]["labels"]["injected"] = "yes"  # written without being tracked
    obj = apply(obj, manifest(), "a", T1)
    assert obj["metadata"]["labels"] == {"app": "web", "injected": "yes"}


# -- associative lists ----------------------------------------------------------------------------

SIDECAR = {"name": "sidecar", "image": "envoy:1"}
LOGGER = {"name": "logger", "image": "busybox"}


def test_containers_merge_by_name_and_a_dropped_one_is_removed() -> None:
    two = manifest()
    two["spec"]["template"]["spec"]["containers"].append(SIDECAR)
    obj = apply(None, two, "a", T0)
    obj = apply(obj, partial(containers(LOGGER)), "b", T1)
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "sidecar", "logger"]  # new items go after the live ones
    assert owns(obj, "b", *CONTAINERS, 'k:{"name":"logger"}')

    obj = apply(obj, manifest(), "a", T2)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["nginx", "logger"]
    assert not owns(obj, "a", *CONTAINERS, 'k:{"name":"sidecar"}')


def test_list_items_follow_upstream_interleaving() -> None:
    two = manifest()
    two["spec"]["template"]["spec"]["containers"].append(SIDECAR)
    obj = apply(None, two, "a", T0)
    # Applied order for the applier's items; live items not applied keep their place after them.
    obj = apply(obj, partial(containers(LOGGER, {"name": "nginx", "image": "nginx:1.25"})), "b", T1)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["logger", "nginx", "sidecar"]


def test_env_merges_by_name() -> None:
    config = manifest()
    nginx(config)["env"] = [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "info"}]
    obj = apply(None, config, "a", T0)
    obj = apply(obj, partial(containers({"name": "nginx", "env": [{"name": "DEBUG", "value": "1"}]})), "b", T1)
    assert nginx(obj)["env"] == [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "info"},
                                 {"name": "DEBUG", "value": "1"}]
    assert owns(obj, "b", *CONTAINERS, NGINX, "f:env", 'k:{"name":"DEBUG"}', "f:value")
    assert owns(obj, "b", *CONTAINERS, NGINX, "f:name") and owns(obj, "a", *CONTAINERS, NGINX, "f:name")

    err = conflict(obj, partial(containers({"name": "nginx", "env": [{"name": "MODE", "value": "dev"}]})), "b")
    assert [c.field for c in err.causes] == ['.spec.template.spec.containers[name="nginx"].env[name="MODE"].value']


def test_ports_are_keyed_by_port_and_protocol() -> None:
    config = manifest()
    nginx(config)["ports"] = [{"containerPort": 53}, {"containerPort": 53, "protocol": "UDP"}]
    obj = apply(None, config, "a", T0)
    assert len(nginx(obj)["ports"]) == 2
    assert owns(obj, "a", *CONTAINERS, NGINX, "f:ports", 'k:{"containerPort":53,"protocol":"UDP"}', "f:protocol")
    nginx(config)["ports"] = [{"containerPort": 53, "protocol": "TCP"}]
    obj = apply(obj, config, "a", T1)
    assert nginx(obj)["ports"] == [{"containerPort": 53, "protocol": "TCP"}]


def test_finalizers_are_a_set() -> None:
    obj = apply(None, manifest(), "a", T0)
    obj = apply(obj, partial(finalizers=["example.com/a"]), "a-fin", T1)
    obj = apply(obj, partial(finalizers=["example.com/b"]), "b-fin", T2)
    assert obj["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert entry(obj, "a-fin")["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"example.com/a"': {}}}}
    obj = apply(obj, partial(), "a-fin", T3)
    assert obj["metadata"]["finalizers"] == ["example.com/b"]
    assert ("a-fin", "Apply") not in managers(obj)


def test_owner_references_are_keyed_by_uid() -> None:
    def ref(uid: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": f"cm-{uid}", "uid": uid}

    obj = apply(None, manifest(), "a", T0)
    obj = apply(obj, partial(ownerReferences=[ref("u1")]), "x", T1)
    obj = apply(obj, partial(ownerReferences=[ref("u2")]), "y", T2)
    assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == ["u1", "u2"]
    # OwnerReference is an atomic struct: the item is owned as a whole.
    assert entry(obj, "x")["fieldsV1"] == {"f:metadata": {"f:ownerReferences": {'k:{"uid":"u1"}': {}}}}
    obj = apply(obj, partial(), "x", T3)
    assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == ["u2"]


def test_atomic_lists_and_maps_are_replaced_whole() -> None:
    config = manifest()
    nginx(config)["args"] = ["--a", "--b"]
    obj = apply(None, config, "a", T0)
    err = conflict(obj, partial(containers({"name": "nginx", "args": ["--c"]})), "b")
    assert [c.field for c in err.causes] == ['.spec.template.spec.containers[name="nginx"].args']
    obj = apply(obj, partial(containers({"name": "nginx", "args": ["--c"]})), "b", T1, force=True)
    assert nginx(obj)["args"] == ["--c"]
    assert owns(obj, "b", *CONTAINERS, NGINX, "f:args") and not owns(obj, "a", *CONTAINERS, NGINX, "f:args")

    err = conflict(obj, partial({"selector": {"matchLabels": {"app": "web", "x": "y"}}}), "b")
    assert [c.field for c in err.causes] == [".spec.selector"]


# -- custom resources ------------------------------------------------------------------------------

ROUTE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                   "items": {"type": "object", "properties": {
                       "host": {"type": "string"}, "path": {"type": "string"}, "backend": {"type": "string"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "tls": {"type": "object", "x-kubernetes-map-type": "atomic",
                "properties": {"secret": {"type": "string"}, "issuer": {"type": "string"}}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }},
    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
}}


def route(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Route", "metadata": {"name": "r", "namespace": "default"},
            "spec": spec}


def apply_cr(live: dict[str, Any] | None, applied: dict[str, Any], manager: str, now: str,
             **kw: Any) -> dict[str, Any]:
    return apply(live, applied, manager, now, schema=ROUTE_SCHEMA, api_version="example.com/v1", **kw)


def test_custom_resource_inline_schema_list_types() -> None:
    obj = apply_cr(None, route({
        "routes": [{"host": "a.example", "path": "/", "backend": "svc-a"}],
        "tags": ["x"],
        "tls": {"secret": "s1"},
        "extra": {"knob": {"level": 1}},
    }), "a", T0)
    assert entry(obj, "a")["fieldsV1"] == {"f:spec": {
        # Keys of untyped maps are members themselves.
        "f:extra": {"f:knob": {".": {}, "f:level": {}}},
        "f:routes": {'k:{"host":"a.example","path":"/"}': {".": {}, "f:backend": {}, "f:host": {}, "f:path": {}}},
        "f:tags": {'v:"x"': {}},
        "f:tls": {},
    }}

    obj = apply_cr(obj, route({"routes": [{"host": "a.example", "path": "/api", "backend": "svc-api"}],
                               "tags": ["y"]}), "b", T1)
    assert [r["path"] for r in obj["spec"]["routes"]] == ["/", "/api"]
    assert obj["spec"]["tags"] == ["x", "y"]

    err = conflict(obj, route({"tls": {"issuer": "letsencrypt"}}), "b", schema=ROUTE_SCHEMA,
                   api_version="example.com/v1")
    assert [c.field for c in err.causes] == [".spec.tls"]

    obj = apply_cr(obj, route({"tags": ["x"], "tls": {"secret": "s1"}, "extra": {"knob": {"level": 1}}}), "a", T2)
    assert obj["spec"]["routes"] == [{"host": "a.example", "path": "/api", "backend": "svc-api"}]


def test_custom_resource_without_status_subresource_owns_status() -> None:
    config = route({"tags": ["x"]})
    config["status"] = {"ready": True}
    obj = apply_cr(None, config, "a", T0, status_subresource=False)
    assert obj["status"] == {"ready": True}
    assert owns(obj, "a", "f:status", "f:ready")


# -- status -----------------------------------------------------------------------------------------

def test_status_in_the_configuration_is_ignored_by_the_main_resource() -> None:
    config = manifest()
    config["status"] = {"replicas": 7}
    obj = apply(None, config, "a", T0)
    assert "status" not in obj
    assert "f:status" not in entry(obj, "a")["fieldsV1"]

    live = copy.deepcopy(obj)
    live["status"] = {"replicas": 1}
    assert apply(live, config, "a", T1)["status"] == {"replicas": 1}


def test_the_status_subresource_applies_status_only() -> None:
    obj = apply(None, manifest(), "a", T0)
    status = partial({"replicas": 9})
    status["status"] = {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    obj = apply(obj, status, "ctrl", T1, subresource="status")
    assert obj["spec"]["replicas"] == 2
    assert obj["status"]["replicas"] == 2
    e = entry(obj, "ctrl")
    assert e["subresource"] == "status"
    assert e["fieldsV1"] == {"f:status": {
        "f:conditions": {'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
        "f:replicas": {}}}
    # A main-resource apply by the same manager is a separate entry.
    obj = apply(obj, partial({"paused": True}), "ctrl", T2)
    assert [(e["manager"], e.get("subresource")) for e in obj["metadata"]["managedFields"]] == [
        ("a", None), ("ctrl", "status"), ("ctrl", None)]


# -- untracked objects and bad requests ------------------------------------------------------------

def test_first_apply_to_an_untracked_object_records_before_first_apply() -> None:
    live = apply(None, manifest(), "a", T0)
    del live["metadata"]["managedFields"]
    err = conflict(live, partial({"replicas": 3}), "b")
    assert err.message == ('Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: '
                           ".spec.replicas")
    obj = apply(live, partial({"replicas": 2}), "b", T1)
    assert managers(obj) == [("b", "Apply"), ("before-first-apply", "Update")]
    assert entry(obj, "before-first-apply", "Update")["time"] == T1
    assert owns(obj, "before-first-apply", "f:spec", "f:replicas", operation="Update")


def test_bad_requests() -> None:
    obj = apply(None, manifest(), "a", T0)
    sent = manifest()
    sent["metadata"]["managedFields"] = []
    with pytest.raises(StatusError) as info:
        apply(obj, sent, "a", T1)
    assert (info.value.code, info.value.message) == (400, "metadata.managedFields must be nil")

    other = manifest()
    other["kind"] = "StatefulSet"
    with pytest.raises(StatusError) as info:
        apply(obj, other, "a", T1)
    assert (info.value.code, info.value.message) == (400, "invalid object type: apps/v1, Kind=StatefulSet")

    duplicated = manifest()
    nginx(duplicated)["env"] = [{"name": "FOO", "value": "1"}, {"name": "FOO", "value": "2"}]
    with pytest.raises(StatusError) as info:
        apply(obj, duplicated, "a", T1)
    assert info.value.code == 500
    assert info.value.message == (
        'failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.'
        'containers[name="nginx"].env: duplicate entries for key [name="FOO"]')

    keyless = manifest()
    nginx(keyless)["env"] = [{"value": "1"}]
    with pytest.raises(StatusError) as info:
        apply(obj, keyless, "a", T1)
    assert info.value.message.endswith(
        '.spec.template.spec.containers[name="nginx"].env: element 0: associative list with keys has an element '
        'that omits all key fields ["name"] (and doesn\'t have default values for any key fields)')


# -- kubectl: client-side apply -> server-side apply -----------------------------------------------

def client_side_applied(config: dict[str, Any]) -> dict[str, Any]:
    """An object created by ``kubectl apply`` (client-side): the configuration plus its
    last-applied annotation, every field owned by ``kubectl-client-side-apply``."""
    obj = copy.deepcopy(config)
    obj["metadata"]["annotations"] = {LAST_APPLIED: go_json(config) + "\n"}
    update_managed_fields(None, obj, "kubectl-client-side-apply", "apps/v1", T0, DEPLOYMENT, DEFS)
    obj["metadata"].update(uid="u-1", resourceVersion="1", generation=1, creationTimestamp=T0)
    return obj


def owners_of_last_applied(obj: dict[str, Any], operation: str) -> list[str]:
    """csaupgrade.FindFieldsOwners for the annotation."""
    path = tuple(PathElement.field(f) for f in ("metadata", "annotations", LAST_APPLIED))
    return [e["manager"] for e in obj["metadata"]["managedFields"]
            if e["operation"] == operation and path in FieldSet.from_fields_v1(e["fieldsV1"])]


def csa_upgrade_patch(obj: dict[str, Any], csa_managers: list[str], ssa_manager: str) -> list[dict[str, Any]]:
    """The JSON patch kubectl sends (csaupgrade.UpgradeManagedFieldsPatch): each client-side
    manager's Update entry is folded into the server-side manager's Apply entry."""
    entries = copy.deepcopy(obj["metadata"]["managedFields"])
    for csa in csa_managers:
        def is_csa(e: dict[str, Any], csa: str = csa) -> bool:
            return e["manager"] == csa and e["operation"] == "Update" and not e.get("subresource")
        target = next((i for i, e in enumerate(entries) if e["manager"] == ssa_manager
                       and e["operation"] == "Apply" and not e.get("subresource")), None)
        if target is None:
            target = next((i for i, e in enumerate(entries) if is_csa(e)), None)
            if target is None:
                continue
            entries[target] = {**entries[target], "operation": "Apply", "manager": ssa_manager}
        source = next((e for e in entries if is_csa(e) and e["apiVersion"] == entries[target]["apiVersion"]), None)
        if source is not None:
            union = (FieldSet.from_fields_v1(entries[target]["fieldsV1"])
                     | FieldSet.from_fields_v1(source["fieldsV1"]))
            entries[target] = {**entries[target], "fieldsV1": union.to_fields_v1()}
        entries = [e for e in entries if not is_csa(e)]
    return [{"op": "replace", "path": "/metadata/managedFields", "value": entries},
            {"op": "replace", "path": "/metadata/resourceVersion", "value": obj["metadata"]["resourceVersion"]}]


def test_kubectl_server_side_apply_migrates_a_client_side_applied_object() -> None:
    old_config = manifest()
    old_config["metadata"]["labels"]["tier"] = "frontend"
    obj = client_side_applied(old_config)
    new_config = manifest(replicas=3)

    # 1. kubectl apply --server-side: replicas conflicts with kubectl-client-side-apply, but the
    #    last-applied annotation shows kubectl set the live value, so the apiserver forces it.
    obj = apply(obj, new_config, "kubectl", T1)
    assert obj["spec"]["replicas"] == 3
    assert owns(obj, "kubectl", "f:spec", "f:replicas")
    assert not owns(obj, "kubectl-client-side-apply", "f:spec", "f:replicas", operation="Update")
    assert obj["metadata"]["labels"]["tier"] == "frontend"  # still owned by the client-side applier
    assert obj["metadata"]["annotations"][LAST_APPLIED] == go_json(new_config) + "\n"
    assert json.loads(obj["metadata"]["annotations"][LAST_APPLIED]) == new_config

    # 2. kubectl keeps the annotation under its own Apply manager (saveLastApplyAnnotationIfNecessary).
    assert owners_of_last_applied(obj, "Apply") == []
    keep = partial(annotations={LAST_APPLIED: obj["metadata"]["annotations"][LAST_APPLIED]})
    obj = apply(obj, keep, "kubectl-last-applied", T2)

    # 3. kubectl folds the client-side managers into its Apply entry with a JSON patch, an
    #    Update whose managedFields the apiserver takes as sent.
    csa = owners_of_last_applied(obj, "Update")
    assert csa == ["kubectl-client-side-apply"]
    expected = FieldSet.from_fields_v1(entry(obj, "kubectl")["fieldsV1"]) | FieldSet.from_fields_v1(
        entry(obj, "kubectl-client-side-apply", "Update")["fieldsV1"])
    patched = apply_json_patch(obj, csa_upgrade_patch(obj, csa, "kubectl"))
    update_managed_fields(obj, patched, "kubectl", "apps/v1", T3, DEPLOYMENT, DEFS)
    assert managers(patched) == [("kubectl-last-applied", "Apply"), ("kubectl", "Apply")]
    assert FieldSet.from_fields_v1(entry(patched, "kubectl")["fieldsV1"]) == expected
    assert entry(patched, "kubectl")["time"] == T1
    assert {k: v for k, v in patched.items() if k != "metadata"} == {k: v for k, v in obj.items() if k != "metadata"}

    # 4. kubectl re-sends its configuration: what only the client-side applier had set is pruned.
    final = apply(patched, new_config, "kubectl", T4)
    assert final["metadata"]["labels"] == {"app": "web"}
    assert final["metadata"]["annotations"] == {LAST_APPLIED: go_json(new_config) + "\n"}
    assert managers(final) == [("kubectl-last-applied", "Apply"), ("kubectl", "Apply")]
    assert entry(final, "kubectl")["fieldsV1"] == apply(None, new_config, "kubectl", T4)["metadata"][
        "managedFields"][0]["fieldsV1"]


def test_kubectl_force_conflicts_against_client_side_apply() -> None:
    obj = client_side_applied(manifest())
    # Without the annotation nothing explains the client-side applier's fields.
    obj = update(obj, lambda o: o["metadata"].pop("annotations"), "kubectl-annotate", T1)
    err = conflict(obj, manifest(replicas=3), "kubectl")
    assert err.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: '
                           ".spec.replicas")
    forced = apply(obj, manifest(replicas=3), "kubectl", T2, force=True)
    assert forced["spec"]["replicas"] == 3
    assert owns(forced, "kubectl", "f:spec", "f:replicas")
    assert not owns(forced, "kubectl-client-side-apply", "f:spec", "f:replicas", operation="Update")


def test_last_applied_only_excuses_fields_it_explains() -> None:
    obj = client_side_applied(manifest())
    obj = update(obj, lambda o: o["spec"].update(replicas=5), "kubectl-edit", T1)
    # The live replicas no longer match the annotation: a real conflict.
    err = conflict(obj, manifest(replicas=3), "kubectl")
    assert [c.message for c in err.causes] == ['conflict with "kubectl-edit" using apps/v1']
    # Other managers never get the annotation rewritten or conflicts excused.
    err = conflict(client_side_applied(manifest()), manifest(replicas=3), "other")
    assert [c.message for c in err.causes] == ['conflict with "kubectl-client-side-apply" using apps/v1']
