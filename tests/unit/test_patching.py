"""PATCH semantics: JSON patch, JSON merge patch and strategic merge patch against real schemas.

Strategic merge expectations follow apimachinery's strategicpatch (including where it puts new list
elements); the last tests check a few patches against the real kubectl, which applies strategic
merge client-side with ``kubectl patch --local``.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from apimachinery.errors import StatusError
from apiserver.definitions import load_definitions
from apiserver.patching import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
    apply_strategic_merge,
)
from apiserver.resourcetypes import ResourceType

DEPLOYMENT = ResourceType(group="apps", version="v1", kind="Deployment", plural="deployments",
                          singular="deployment", namespaced=True, schema_name="io.k8s.api.apps.v1.Deployment",
                          strategic_merge=True)
CRD = ResourceType(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition",
                   plural="customresourcedefinitions", singular="customresourcedefinition", namespaced=False,
                   schema_name="io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                   strategic_merge=True)
WIDGET = ResourceType(group="example.com", version="v1", kind="Widget", plural="widgets", singular="widget",
                      namespaced=True)


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "frontend"},
                     "finalizers": ["example.com/a", "example.com/b"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "nginx:1.25",
                         "env": [{"name": "MODE", "value": "prod"}, {"name": "LOG", "value": "info"}],
                         "ports": [{"containerPort": 80, "name": "http"},
                                   {"containerPort": 443, "name": "https"}],
                         "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}]},
                        {"name": "log", "image": "busybox:1.36"},
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config"}},
                                {"name": "cache", "emptyDir": {}}],
                },
            },
        },
    }


def smp(obj: dict[str, Any], patch: Any, rtype: ResourceType = DEPLOYMENT) -> dict[str, Any]:
    return apply_patch(obj, orjson.dumps(patch), STRATEGIC_MERGE_PATCH, rtype)


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def container(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod_spec(obj)["containers"] if c["name"] == name)


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


def failure(call: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call(*args)
    return caught.value


# --- strategic merge patch: merge-key lists ---------------------------------------------------------


def test_smp_changes_the_image_of_one_container_and_keeps_the_others() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "containers": [{"name": "app", "image": "nginx:1.26"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["app", "log"]
    assert container(out, "app")["image"] == "nginx:1.26"
    assert container(out, "app")["env"] == container(deployment(), "app")["env"]
    assert container(out, "log") == {"name": "log", "image": "busybox:1.36"}


def test_smp_adds_a_container_first_when_no_order_is_given_like_upstream() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "containers": [{"name": "proxy", "image": "envoy"}]}}}})
    # apimachinery interleaves by live order and an element the server never had sorts first.
    assert names(pod_spec(out)["containers"]) == ["proxy", "app", "log"]
    assert container(out, "proxy") == {"name": "proxy", "image": "envoy"}


def test_smp_deletes_a_container_with_patch_delete() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "containers": [{"name": "log", "$patch": "delete"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["app"]


def test_smp_changes_adds_and_deletes_containers_in_one_patch() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "proxy"}],
        "containers": [{"name": "app", "image": "nginx:1.26"}, {"name": "proxy", "image": "envoy"},
                       {"name": "log", "$patch": "delete"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["app", "proxy"]
    assert container(out, "app")["image"] == "nginx:1.26"
    assert "$patch" not in str(out)


def test_smp_replaces_the_whole_container_list_with_a_replace_element() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "containers": [{"name": "only", "image": "alpine"}, {"$patch": "replace"}]}}}})
    assert pod_spec(out)["containers"] == [{"name": "only", "image": "alpine"}]


def test_smp_merges_env_by_name() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {"containers": [{
        "name": "app",
        "env": [{"name": "LOG", "value": "debug"}, {"name": "MODE", "$patch": "delete"},
                {"name": "NEW", "value": "1"}]}]}}}})
    assert container(out, "app")["env"] == [{"name": "LOG", "value": "debug"}, {"name": "NEW", "value": "1"}]


def test_smp_merges_container_ports_by_container_port() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {"containers": [{
        "name": "app",
        "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}, {"containerPort": 9090}],
        "ports": [{"containerPort": 443, "name": "tls"}, {"containerPort": 9090, "name": "metrics"}]}]}}}})
    assert container(out, "app")["ports"] == [{"containerPort": 80, "name": "http"},
                                              {"containerPort": 443, "name": "tls"},
                                              {"containerPort": 9090, "name": "metrics"}]


def test_smp_deletes_a_port_by_its_container_port() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {"containers": [{
        "name": "app", "ports": [{"containerPort": 80, "$patch": "delete"}]}]}}}})
    assert container(out, "app")["ports"] == [{"containerPort": 443, "name": "https"}]


def test_smp_merges_volumes_and_volume_mounts_by_name() -> None:
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "$setElementOrder/volumes": [{"name": "config"}, {"name": "cache"}, {"name": "data"}],
        "volumes": [{"name": "config", "configMap": {"name": "web-config-v2"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}}],
        "containers": [{"name": "app",
                        "$setElementOrder/volumeMounts": [{"mountPath": "/etc/app"}, {"mountPath": "/data"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}}})
    assert pod_spec(out)["volumes"] == [{"name": "config", "configMap": {"name": "web-config-v2"}},
                                        {"name": "cache", "emptyDir": {}},
                                        {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}}]
    assert container(out, "app")["volumeMounts"] == [{"name": "config", "mountPath": "/etc/app"},
                                                     {"name": "data", "mountPath": "/data"}]


def test_smp_retain_keys_on_a_volume_switches_its_source() -> None:
    # Volumes are `merge,retainKeys`: kubectl sends $retainKeys so the old source does not linger.
    out = smp(deployment(), {"spec": {"template": {"spec": {"volumes": [
        {"name": "config", "$retainKeys": ["name", "secret"], "secret": {"secretName": "web"}}]}}}})
    assert pod_spec(out)["volumes"][0] == {"name": "config", "secret": {"secretName": "web"}}


def test_smp_set_element_order_reorders_containers_as_kubectl_sends_it() -> None:
    # `kubectl apply` after swapping the two containers in the manifest sends only the order.
    out = smp(deployment(), {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["log", "app"]
    assert container(out, "app") == container(deployment(), "app")


def test_smp_set_element_order_keeps_server_only_containers_where_the_live_list_has_them() -> None:
    obj = deployment()
    pod_spec(obj)["containers"].append({"name": "injected-sidecar", "image": "mesh"})
    out = smp(obj, {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}],
        "containers": [{"name": "log", "image": "busybox:1.37"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["log", "app", "injected-sidecar"]
    assert container(out, "log")["image"] == "busybox:1.37"


def test_smp_set_element_order_puts_a_new_container_where_a_deleted_one_was_like_upstream() -> None:
    # Upstream merges in place, so the order step sees the new container in the deleted one's slot.
    obj = deployment()
    pod_spec(obj)["containers"].insert(0, {"name": "injected", "image": "mesh"})
    out = smp(obj, {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "metrics"}],
        "containers": [{"name": "metrics", "image": "exporter"}, {"name": "log", "$patch": "delete"}]}}}})
    assert names(pod_spec(out)["containers"]) == ["injected", "app", "metrics"]


def test_smp_rejects_a_patch_list_out_of_order_with_set_element_order() -> None:
    err = failure(smp, deployment(), {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "log"}],
        "containers": [{"name": "log", "image": "x"}, {"name": "app", "image": "y"}]}}}})
    assert (err.code, err.reason) == (400, "BadRequest")
    assert "doesn't match $setElementOrder/containers" in err.message


# --- strategic merge patch: maps, retainKeys, primitive lists ----------------------------------------


def test_smp_null_deletes_a_label() -> None:
    out = smp(deployment(), {"metadata": {"labels": {"tier": None, "track": "stable"}}})
    assert out["metadata"]["labels"] == {"app": "web", "track": "stable"}


def test_smp_retain_keys_switches_deployment_strategy_to_recreate() -> None:
    # What `kubectl apply` sends when the manifest changes strategy.type to Recreate.
    out = smp(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
                                                   "rollingUpdate": None}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_retain_keys_drops_unlisted_fields_even_without_a_null() -> None:
    out = smp(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_without_retain_keys_the_rolling_update_stays() -> None:
    out = smp(deployment(), {"spec": {"strategy": {"type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate",
                                       "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_smp_delete_from_primitive_list_removes_a_finalizer() -> None:
    out = smp(deployment(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert out["metadata"]["finalizers"] == ["example.com/b"]


def test_smp_primitive_merge_list_is_a_union_in_upstream_order() -> None:
    out = smp(deployment(), {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}})
    # No duplicates; patch items keep the patch's order and the new one sorts before live-only ones.
    assert out["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]


def test_smp_primitive_merge_list_follows_set_element_order() -> None:
    out = smp(deployment(), {"metadata": {
        "$setElementOrder/finalizers": ["example.com/a", "example.com/b", "example.com/c"],
        "finalizers": ["example.com/c"]}})
    assert out["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/c"]


def test_smp_replaces_a_map_with_patch_replace() -> None:
    out = smp(deployment(), {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert out["metadata"]["labels"] == {"only": "this"}


def test_smp_patch_delete_on_a_map_empties_it_like_upstream() -> None:
    out = smp(deployment(), {"spec": {"strategy": {"rollingUpdate": {"$patch": "delete"}}}})
    assert out["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {}}


def test_smp_replaces_lists_without_a_merge_strategy() -> None:
    obj = deployment()
    container(obj, "app")["args"] = ["--a", "--b"]
    out = smp(obj, {"spec": {"template": {"spec": {"containers": [{"name": "app", "args": ["--c"]}]}}}})
    assert container(out, "app")["args"] == ["--c"]


def test_smp_replace_strategy_replaces_the_pdb_selector() -> None:
    pdb_type = ResourceType(group="policy", version="v1", kind="PodDisruptionBudget",
                            plural="poddisruptionbudgets", singular="poddisruptionbudget", namespaced=True,
                            schema_name="io.k8s.api.policy.v1.PodDisruptionBudget", strategic_merge=True)
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
           "spec": {"selector": {"matchLabels": {"app": "web", "tier": "fe"}}}}
    out = smp(pdb, {"spec": {"selector": {"matchLabels": {"app": "api"}}}}, pdb_type)
    assert out["spec"]["selector"] == {"matchLabels": {"app": "api"}}


def test_smp_never_leaves_directives_in_new_values() -> None:
    obj = deployment()
    del obj["spec"]["strategy"]
    init = {"name": "init", "image": "x", "env": [{"name": "A", "value": None}]}
    out = smp(obj, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"},
                             "template": {"spec": {"initContainers": [init]}}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    assert pod_spec(out)["initContainers"] == [{"name": "init", "image": "x", "env": [{"name": "A"}]}]


def test_smp_does_not_mutate_the_current_object_or_the_patch() -> None:
    obj = deployment()
    patch = {"metadata": {"labels": {"tier": None}},
             "spec": {"template": {"spec": {"containers": [{"name": "log", "$patch": "delete"}]}}}}
    before, patch_before = copy.deepcopy(obj), copy.deepcopy(patch)
    smp(obj, patch)
    apply_strategic_merge(obj, patch, load_definitions()[DEPLOYMENT.schema_name or ""], load_definitions())
    assert obj == before
    assert patch == patch_before


def test_smp_merges_unknown_fields_like_a_json_merge_patch() -> None:
    obj = deployment()
    obj["spec"]["extra"] = {"keep": 1, "items": [1, 2]}
    out = smp(obj, {"spec": {"extra": {"items": [3], "drop": None, "new": {"x": None, "y": 1}}}})
    assert out["spec"]["extra"] == {"keep": 1, "items": [3], "new": {"y": 1}}


def test_smp_without_a_schema_replaces_lists() -> None:
    untyped = ResourceType(group="apps", version="v1", kind="Deployment", plural="deployments",
                           singular="deployment", namespaced=True, strategic_merge=True)
    out = smp(deployment(), {"spec": {"template": {"spec": {"containers": [{"name": "x", "image": "y"}]}}}},
              untyped)
    assert pod_spec(out)["containers"] == [{"name": "x", "image": "y"}]


def test_smp_keeps_dollar_fields_that_the_schema_declares() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com",
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    schema = {"type": "object", "$schema": "http://json-schema.org/draft-04/schema#",
              "properties": {"size": {"$ref": "#/definitions/size"}}}
    # `versions` is an atomic list, so the patch carries the whole version.
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    out = smp(crd, {"spec": {"versions": [version]}}, CRD)
    assert out["spec"]["versions"] == [version]


# --- strategic merge patch: patches shaped the way kubectl builds them --------------------------------


def test_kubectl_set_image_patch() -> None:
    # `kubectl set image deployment/web app=nginx:1.27` sends a two-way patch with the element order.
    patch = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "log"}],
                                            "containers": [{"image": "nginx:1.27", "name": "app"}]}}}}
    out = smp(deployment(), patch)
    assert names(pod_spec(out)["containers"]) == ["app", "log"]
    assert container(out, "app")["image"] == "nginx:1.27"
    assert container(out, "app")["ports"] == container(deployment(), "app")["ports"]


def test_kubectl_apply_three_way_patch() -> None:
    # The manifest renamed container `log` to `shipper`, changed an env value, moved to Recreate and
    # dropped the `tier` label; kubectl apply diffs last-applied, manifest and live into this patch.
    last_applied = '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}'
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied},
                     "labels": {"tier": None}},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "shipper"}],
                "containers": [
                    {"$setElementOrder/env": [{"name": "MODE"}, {"name": "LOG"}],
                     "env": [{"name": "LOG", "value": "warn"}], "name": "app"},
                    {"image": "fluent-bit:3", "name": "shipper"},
                    {"$patch": "delete", "name": "log"},
                ]}},
        },
    }
    out = smp(deployment(), patch)
    assert out["metadata"]["labels"] == {"app": "web"}
    assert out["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": last_applied}
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    assert names(pod_spec(out)["containers"]) == ["app", "shipper"]
    assert container(out, "app")["env"] == [{"name": "MODE", "value": "prod"},
                                            {"name": "LOG", "value": "warn"}]
    assert container(out, "shipper") == {"image": "fluent-bit:3", "name": "shipper"}


def test_kubectl_rollout_restart_patch() -> None:
    restarted = {"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"}
    out = smp(deployment(), {"spec": {"template": {"metadata": {"annotations": restarted}}}})
    assert out["spec"]["template"]["metadata"] == {"labels": {"app": "web"}, "annotations": restarted}


def test_kubectl_apply_finalizer_change_patch() -> None:
    # Manifest finalizers went from [a, b] to [a, c]: kubectl sends the order, the additions and a
    # parallel deletion list.
    patch = {"metadata": {"$setElementOrder/finalizers": ["example.com/a", "example.com/c"],
                          "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
                          "finalizers": ["example.com/c"]}}
    out = smp(deployment(), patch)
    assert out["metadata"]["finalizers"] == ["example.com/a", "example.com/c"]


# --- strategic merge patch: refusals -------------------------------------------------------------------


@pytest.mark.parametrize(("patch", "fragment"), [
    ({"metadata": {"labels": {"$patch": "bogus"}}}, "unknown patch type"),
    ({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}},
     "merging lists cannot yet be specified"),
    ({"spec": {"$bogus": 1}}, "unknown strategic merge patch directive"),
    ({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}},
     "does not contain declared merge key"),
    ({"spec": {"strategy": {"$retainKeys": "type"}}}, "invalid patch format of retainKeys"),
    ({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}},
     "invalid patch format of retainKeys"),
    ({"metadata": {"$setElementOrder": ["a"]}}, "invalid patch format of setElementOrder list"),
    ({"metadata": {"$setElementOrder/finalizers": "a"}}, "invalid patch format of setElementOrder list"),
    ({"metadata": {"$deleteFromPrimitiveList": ["a"]}}, "invalid patch format of primitive list"),
    ({"metadata": {"finalizers": [1]}}, "list element types are not identical"),
])
def test_smp_rejects_bad_directives_with_bad_request(patch: dict[str, Any], fragment: str) -> None:
    err = failure(smp, deployment(), patch)
    assert (err.code, err.reason) == (400, "BadRequest")
    assert fragment in err.message


def test_smp_rejects_scalars_in_a_list_merged_by_key() -> None:
    obj = deployment()
    pod_spec(obj)["imagePullSecrets"] = []
    err = failure(smp, obj, {"spec": {"template": {"spec": {"imagePullSecrets": ["registry"]}}}})
    assert (err.code, err.reason) == (400, "BadRequest")
    assert "expected maps in a list merged by 'name'" in err.message


def test_smp_rejects_lists_of_lists_as_invalid() -> None:
    obj = deployment()
    obj["metadata"]["finalizers"] = []
    err = failure(smp, obj, {"metadata": {"finalizers": [["a"]]}})
    assert (err.code, err.reason) == (422, "Invalid")
    assert "lists of lists are not supported" in err.message


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'"text"', b"null", b""])
def test_smp_body_must_be_a_json_object(body: bytes) -> None:
    err = failure(apply_patch, deployment(), body, STRATEGIC_MERGE_PATCH, DEPLOYMENT)
    assert (err.code, err.reason) == (400, "BadRequest")


# --- media types ---------------------------------------------------------------------------------------


def test_strategic_merge_is_unsupported_for_custom_resources() -> None:
    err = failure(apply_patch, {"kind": "Widget"}, b"{}", STRATEGIC_MERGE_PATCH, WIDGET)
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")
    assert err.message == ("the body of the request was in an unknown format - accepted media types include: "
                           "application/json-patch+json, application/merge-patch+json, "
                           "application/apply-patch+yaml")


@pytest.mark.parametrize("content_type", [APPLY_PATCH, "application/json", "text/plain", ""])
def test_other_media_types_are_unsupported(content_type: str) -> None:
    err = failure(apply_patch, deployment(), b"{}", content_type, DEPLOYMENT)
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")


def test_media_type_parameters_are_ignored() -> None:
    out = apply_patch(deployment(), b'{"spec":{"replicas":5}}', "application/merge-patch+json; charset=utf-8",
                      DEPLOYMENT)
    assert out["spec"]["replicas"] == 5


# --- JSON merge patch ----------------------------------------------------------------------------------


def merge(obj: dict[str, Any], patch: Any, rtype: ResourceType = DEPLOYMENT) -> dict[str, Any]:
    return apply_patch(obj, orjson.dumps(patch), MERGE_PATCH, rtype)


def test_merge_patch_merges_objects_and_null_deletes() -> None:
    out = merge(deployment(), {"metadata": {"labels": {"tier": None, "track": "canary"}},
                               "spec": {"replicas": 3}})
    assert out["metadata"]["labels"] == {"app": "web", "track": "canary"}
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["strategy"] == deployment()["spec"]["strategy"]


def test_merge_patch_replaces_lists_wholesale() -> None:
    out = merge(deployment(), {"spec": {"template": {"spec": {
        "containers": [{"name": "only", "image": "x"}]}}}})
    assert pod_spec(out)["containers"] == [{"name": "only", "image": "x"}]


def test_merge_patch_drops_nulls_inside_new_objects() -> None:
    patch = {"spec": {"extra": {"a": None, "b": 2}, "size": None}}
    out = merge({"kind": "Widget", "spec": {"size": 1}}, patch, WIDGET)
    assert out == {"kind": "Widget", "spec": {"extra": {"b": 2}}}


def test_merge_patch_does_not_mutate_the_current_object() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    merge(obj, {"metadata": {"labels": {"app": None}},
                "spec": {"strategy": {"rollingUpdate": {"maxSurge": 5}}}})
    assert obj == before


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'[{"op": "add"}]', b"42", b"null"])
def test_merge_patch_body_must_be_a_json_object(body: bytes) -> None:
    err = failure(apply_patch, deployment(), body, MERGE_PATCH, DEPLOYMENT)
    assert (err.code, err.reason) == (400, "BadRequest")


# --- JSON patch ----------------------------------------------------------------------------------------


def json_patch(obj: dict[str, Any], operations: Any) -> dict[str, Any]:
    return apply_patch(obj, orjson.dumps(operations), JSON_PATCH, DEPLOYMENT)


def test_json_patch_applies_operations_in_order() -> None:
    out = json_patch(deployment(), [
        {"op": "test", "path": "/spec/replicas", "value": 2},
        {"op": "replace", "path": "/spec/replicas", "value": 4},
        {"op": "add", "path": "/metadata/labels/track", "value": "canary"},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/c"},
        {"op": "move", "from": "/metadata/labels/track", "path": "/metadata/labels/stage"},
        {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/name"},
        {"op": "add", "path": "/spec/template/spec/containers/1/image", "value": "busybox:1.37"},
    ])
    assert out["spec"]["replicas"] == 4
    assert out["metadata"]["labels"] == {"app": "web", "stage": "canary", "name": "web"}
    assert out["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/c"]
    assert container(out, "log")["image"] == "busybox:1.37"


def test_json_patch_does_not_mutate_the_current_object_even_when_it_fails() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    json_patch(obj, [{"op": "remove", "path": "/metadata/labels"}])
    failure(json_patch, obj, [{"op": "remove", "path": "/metadata/labels"},
                              {"op": "remove", "path": "/nope"}])
    assert obj == before


@pytest.mark.parametrize(("operations", "fragment"), [
    ([{"op": "remove", "path": "/metadata/labels/missing"}],
     'operation 0 ("remove" "/metadata/labels/missing")'),
    ([{"op": "replace", "path": "/spec/missing/deeper", "value": 1}], '("replace" "/spec/missing/deeper")'),
    ([{"op": "test", "path": "/spec/replicas", "value": 3}], "test failed"),
    ([{"op": "add", "path": "/metadata/finalizers/7", "value": "x"}], '("add" "/metadata/finalizers/7")'),
    ([{"op": "replace", "path": "/metadata/finalizers/x", "value": "y"}], "not a valid sequence index"),
    ([{"op": "add", "path": "/spec/replicas", "value": 1},
      {"op": "remove", "path": "/metadata/finalizers/9"}],
     'operation 1 ("remove" "/metadata/finalizers/9")'),
    ([{"op": "move", "from": "/nope", "path": "/spec/x"}], 'from "/nope"'),
    ([{"op": "frobnicate", "path": "/spec"}], "Unknown operation"),
    ([{"path": "/spec"}], "does not contain 'op'"),
    ([{"op": "add", "path": "/spec/x"}], "'value'"),
    ([{"op": "add", "path": "spec", "value": 1}], "must start with /"),
    ([{"op": "replace", "path": "", "value": [1]}], "not a JSON object"),
])
def test_json_patch_application_failures_are_invalid(operations: list[Any], fragment: str) -> None:
    err = failure(json_patch, deployment(), operations)
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message.startswith("the server rejected our request due to an error in our request")
    assert fragment in err.message


@pytest.mark.parametrize("body", [b"{not json", b'{"op": "add"}', b'"add"', b"[1]", b'[{"op": "add"}, []]'])
def test_json_patch_body_must_be_a_list_of_objects(body: bytes) -> None:
    err = failure(apply_patch, deployment(), body, JSON_PATCH, DEPLOYMENT)
    assert (err.code, err.reason) == (400, "BadRequest")


def test_json_patch_with_too_many_operations_is_too_large() -> None:
    operations = [{"op": "test", "path": "/kind", "value": "Deployment"}] * 10001
    err = failure(json_patch, deployment(), operations)
    assert (err.code, err.reason) == (413, "RequestEntityTooLarge")


@pytest.mark.parametrize("content_type", [MERGE_PATCH, STRATEGIC_MERGE_PATCH])
def test_deeply_nested_patches_are_bad_requests(content_type: str) -> None:
    body = b'{"spec":' + b'{"x":' * 1000 + b"1" + b"}" * 1001
    err = failure(apply_patch, deployment(), body, content_type, DEPLOYMENT)
    assert (err.code, err.reason) == (400, "BadRequest")


# --- the real kubectl as the reference for strategic merge ---------------------------------------------


def _kubectl() -> str | None:
    beside_python = Path(sys.executable).parent / "kubectl"
    return str(beside_python) if beside_python.exists() else shutil.which("kubectl")


KUBECTL_CASES = {
    "new container without order": {"spec": {"template": {"spec": {
        "containers": [{"name": "p", "image": "e"}]}}}},
    "apply-style rename": {"spec": {
        "strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"},
        "template": {"spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "shipper"}],
                              "containers": [{"name": "shipper", "image": "fb"},
                                             {"$patch": "delete", "name": "log"}]}}}},
    "finalizers": {"metadata": {"$setElementOrder/finalizers": ["example.com/c", "example.com/a"],
                                "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
                                "finalizers": ["example.com/c"]}},
    "env and ports": {"spec": {"template": {"spec": {"containers": [{
        "name": "app", "env": [{"name": "Z", "value": "1"}, {"name": "MODE", "$patch": "delete"}],
        "ports": [{"containerPort": 8080}, {"containerPort": 443, "name": "tls"}]}]}}}},
    "volumes replaced": {"spec": {"template": {"spec": {"volumes": [{"name": "v", "emptyDir": {}},
                                                                    {"$patch": "replace"}]}}}},
}


@pytest.mark.skipif(_kubectl() is None, reason="kubectl binary not available")
@pytest.mark.parametrize("case", sorted(KUBECTL_CASES))
def test_strategic_merge_matches_kubectl_patch_local(case: str, tmp_path: Path) -> None:
    obj = deployment()
    source = tmp_path / "deployment.json"
    source.write_bytes(orjson.dumps(obj))
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    patch = KUBECTL_CASES[case]
    done = subprocess.run(
        [str(_kubectl()), "patch", "--local", "-f", str(source), "--type=strategic",
         "-p", orjson.dumps(patch).decode(), "-o", "json"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig")}, check=True)
    assert smp(obj, patch) == orjson.loads(done.stdout)
