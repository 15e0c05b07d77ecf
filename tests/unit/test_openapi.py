"""OpenAPI v3 documents: the shapes kubectl explain, strict validation and client-side apply use."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from apiserver.definitions import load_definitions
from apiserver.openapi.v3 import group_version_path, openapi_document, openapi_index
from apiserver.resourcetypes import ResourceType

DEFS = load_definitions()
C = "#/components/schemas/"

CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True,
                         schema_name="io.k8s.api.core.v1.ConfigMap", strategic_merge=True)
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", "namespace", False,
                         subresources=("status",), schema_name="io.k8s.api.core.v1.Namespace",
                         strategic_merge=True)
DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True,
                          subresources=("status", "scale"),
                          schema_name="io.k8s.api.apps.v1.Deployment", strategic_merge=True)
# A custom kind: no strategic merge, and a definition without an upstream list schema.
WIDGET = ResourceType("example.com", "v1", "Widget", "widgets", "widget", True,
                      subresources=("status",), schema_name="com.example.v1.Widget")
WIDGET_DEFS = {
    **DEFS,
    "com.example.v1.Widget": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"type": ["object", "null"], "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"port": {
                         "$ref": "#/$defs/io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                         "description": "The port."}}},
        },
    },
}


def doc(group: str, version: str, types: list[ResourceType], defs: Any = DEFS) -> dict[str, Any]:
    body, _ = openapi_document(group, version, types, defs)
    return json.loads(body)


@pytest.fixture(scope="module")
def core() -> dict[str, Any]:
    return doc("", "v1", [CONFIGMAP, NAMESPACE])


@pytest.fixture(scope="module")
def apps() -> dict[str, Any]:
    return doc("apps", "v1", [DEPLOYMENT])


@pytest.fixture(scope="module")
def widgets() -> dict[str, Any]:
    return doc("example.com", "v1", [WIDGET], WIDGET_DEFS)


def refs_in(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        for value in node.values():
            out.extend(refs_in(value))
        return out
    if isinstance(node, list):
        return [r for value in node for r in refs_in(value)]
    return []


def walk_schemas(node: Any):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk_schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk_schemas(value)


def patch_op_for(document: dict[str, Any], gvk: dict[str, str]) -> dict[str, Any]:
    """What kubectl's QueryParamVerifierV3 and apply's patcher look for."""
    found = [item["patch"] for item in document["paths"].values()
             if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]
    assert found, f"no PATCH operation for {gvk}"
    return found[0]


def query_params(op: dict[str, Any]) -> set[str]:
    return {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}


def test_group_version_path_and_index() -> None:
    assert group_version_path("", "v1") == "api/v1"
    assert group_version_path("apps", "v1") == "apis/apps/v1"
    index = openapi_index({"apis/apps/v1": "ABC", "api/v1": "DEF"}, "/clusters/s1/")
    assert index == {"paths": {
        "api/v1": {"serverRelativeURL": "/clusters/s1/openapi/v3/api/v1?hash=DEF"},
        "apis/apps/v1": {"serverRelativeURL": "/clusters/s1/openapi/v3/apis/apps/v1?hash=ABC"},
    }}
    assert openapi_index({"api/v1": "H"}, "")["paths"]["api/v1"]["serverRelativeURL"] == \
        "/openapi/v3/api/v1?hash=H"


def test_document_envelope(core: dict[str, Any]) -> None:
    assert core["openapi"] == "3.0.0"
    assert core["info"]["title"]
    assert core["paths"]
    assert core["components"]["schemas"]


def test_namespaced_paths_and_operations(core: dict[str, Any]) -> None:
    paths = core["paths"]
    gvk = {"group": "", "kind": "ConfigMap", "version": "v1"}
    collection = paths["/api/v1/namespaces/{namespace}/configmaps"]
    item = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    every = paths["/api/v1/configmaps"]
    assert {m: collection[m]["x-kubernetes-action"] for m in ("get", "post", "delete")} == \
        {"get": "list", "post": "post", "delete": "deletecollection"}
    assert {m: item[m]["x-kubernetes-action"] for m in ("get", "put", "patch", "delete")} == \
        {"get": "get", "put": "put", "patch": "patch", "delete": "delete"}
    assert every["get"]["x-kubernetes-action"] == "list"
    operations = [op for p in (collection, item, every) for m, op in p.items() if m != "parameters"]
    for op in operations:
        assert op["operationId"]
        assert op["x-kubernetes-group-version-kind"] == gvk
    ids = [op["operationId"] for p in paths.values() for m, op in p.items() if m != "parameters"]
    assert len(ids) == len(set(ids))
    assert item["get"]["operationId"] == "readCoreV1NamespacedConfigMap"
    assert every["get"]["operationId"] == "listCoreV1ConfigMapForAllNamespaces"
    assert {p["name"] for p in item["parameters"] if p["in"] == "path"} == {"name", "namespace"}
    assert all(p["required"] for p in item["parameters"] if p["in"] == "path")
    assert {p["name"] for p in collection["parameters"] if p["in"] == "path"} == {"namespace"}
    assert "/api/v1/namespaces/{namespace}/configmaps/{name}/status" not in paths


def test_query_parameters(core: dict[str, Any]) -> None:
    item = core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    collection = core["paths"]["/api/v1/namespaces/{namespace}/configmaps"]
    write = {"dryRun", "fieldManager", "fieldValidation"}
    assert write <= query_params(collection["post"])
    assert write <= query_params(item["put"])
    assert write | {"force"} <= query_params(item["patch"])
    assert "force" not in query_params(item["put"])
    assert {"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
            "resourceVersionMatch", "watch", "allowWatchBookmarks", "sendInitialEvents",
            "timeoutSeconds"} <= query_params(collection["get"])
    force = next(p for p in item["patch"]["parameters"] if p["name"] == "force")
    assert force["schema"] == {"type": "boolean"}


def test_cluster_scoped_kind_and_status(core: dict[str, Any]) -> None:
    paths = core["paths"]
    assert "/api/v1/namespaces" in paths
    item = paths["/api/v1/namespaces/{name}"]
    assert item["get"]["operationId"] == "readCoreV1Namespace"
    assert {p["name"] for p in item["parameters"] if p["in"] == "path"} == {"name"}
    status = paths["/api/v1/namespaces/{name}/status"]
    assert set(status) == {"get", "put", "patch", "parameters"}
    assert status["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Namespace"
    # No all-namespaces twin for a cluster-scoped kind, and no namespace path parameter.
    assert all("{namespace}" not in p for p in paths if "namespaces" in p and "configmaps" not in p)


def test_apps_paths_status_and_scale(apps: dict[str, Any]) -> None:
    paths = apps["paths"]
    assert set(paths) == {
        "/apis/apps/v1/deployments",
        "/apis/apps/v1/namespaces/{namespace}/deployments",
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status",
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
    }
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": C + "io.k8s.api.autoscaling.v1.Scale"}
    assert scale["patch"]["x-kubernetes-group-version-kind"] == \
        {"group": "autoscaling", "kind": "Scale", "version": "v1"}
    status = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]
    assert status["put"]["requestBody"]["content"]["*/*"]["schema"] == \
        {"$ref": C + "io.k8s.api.apps.v1.Deployment"}


def test_responses_reference_kind_and_list(apps: dict[str, Any]) -> None:
    paths = apps["paths"]
    listing = paths["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"]
    assert listing["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": C + "io.k8s.api.apps.v1.DeploymentList"}
    read = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"]
    assert read["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": C + "io.k8s.api.apps.v1.Deployment"}


def test_patch_content_types_follow_strategic_merge(core, apps, widgets) -> None:
    smp = "application/strategic-merge-patch+json"
    common = {"application/json-patch+json", "application/merge-patch+json",
              "application/apply-patch+yaml"}
    for document, gvk in ((core, {"group": "", "kind": "ConfigMap", "version": "v1"}),
                          (apps, {"group": "apps", "kind": "Deployment", "version": "v1"})):
        content = patch_op_for(document, gvk)["requestBody"]["content"]
        assert set(content) == common | {smp}
    for item in widgets["paths"].values():
        if "patch" in item:
            assert set(item["patch"]["requestBody"]["content"]) == common


def test_field_validation_is_discoverable_per_gvk(core, apps, widgets) -> None:
    # kubectl --validate=strict needs this, or it falls back to OpenAPI v2 and fails.
    for document, gvk in ((core, {"group": "", "kind": "ConfigMap", "version": "v1"}),
                          (core, {"group": "", "kind": "Namespace", "version": "v1"}),
                          (apps, {"group": "apps", "kind": "Deployment", "version": "v1"}),
                          (widgets, {"group": "example.com", "kind": "Widget", "version": "v1"})):
        assert "fieldValidation" in query_params(patch_op_for(document, gvk))


def test_kind_schemas_carry_gvk(core, apps, widgets) -> None:
    schemas = apps["components"]["schemas"]
    assert {"group": "apps", "kind": "Deployment", "version": "v1"} in \
        schemas["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"]
    assert {"group": "apps", "kind": "DeploymentList", "version": "v1"} in \
        schemas["io.k8s.api.apps.v1.DeploymentList"]["x-kubernetes-group-version-kind"]
    assert {"group": "", "kind": "ConfigMap", "version": "v1"} in \
        core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"]
    # A kind whose definition has no GVK tag gets one; its list is synthesised.
    wschemas = widgets["components"]["schemas"]
    assert wschemas["com.example.v1.Widget"]["x-kubernetes-group-version-kind"] == \
        [{"group": "example.com", "kind": "Widget", "version": "v1"}]
    wlist = wschemas["com.example.v1.WidgetList"]
    assert wlist["x-kubernetes-group-version-kind"] == \
        [{"group": "example.com", "kind": "WidgetList", "version": "v1"}]
    assert wlist["properties"]["items"]["items"] == {"$ref": C + "com.example.v1.Widget"}
    assert wlist["required"] == ["items"]


def test_every_ref_resolves(core, apps, widgets) -> None:
    for document in (core, apps, widgets):
        schemas = document["components"]["schemas"]
        refs = refs_in(document)
        assert refs
        for ref in refs:
            assert ref.startswith(C), ref
            assert ref[len(C):] in schemas, ref


def test_schema_conversion(apps: dict[str, Any]) -> None:
    schemas = apps["components"]["schemas"]
    for node in walk_schemas(schemas):
        assert not isinstance(node.get("type"), list), node
        assert "$schema" not in node and "$id" not in node
    # A described reference is wrapped so explain can show the field's own description.
    template = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["template"]
    assert template["allOf"] == [{"$ref": C + "io.k8s.api.core.v1.PodTemplateSpec"}]
    assert template["description"]
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["type"] == "integer" and replicas["format"] == "int32"
    assert schemas["io.k8s.api.apps.v1.DeploymentSpec"]["required"] == ["selector", "template"]
    kind_prop = schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["kind"]
    assert kind_prop["type"] == "string" and "enum" not in kind_prop


def test_strategic_merge_metadata_on_lists(apps: dict[str, Any]) -> None:
    schemas = apps["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"] == {"$ref": C + "io.k8s.api.core.v1.Container"}
    ports = schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]
    assert ports["x-kubernetes-patch-merge-key"] == "containerPort"


def test_scalar_unions(apps: dict[str, Any], widgets: dict[str, Any]) -> None:
    schemas = apps["components"]["schemas"]
    ios = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert ios["format"] == "int-or-string"
    assert ios["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    assert ios["x-kubernetes-int-or-string"] is True
    quantity = schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["oneOf"] == [{"type": "string"}, {"type": "number"}]
    surge = schemas["io.k8s.api.apps.v1.RollingUpdateDeployment"]["properties"]["maxSurge"]
    assert surge["allOf"] == [{"$ref": C + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]
    port = widgets["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]
    assert port["type"] == "object" and port["x-kubernetes-preserve-unknown-fields"] is True


def test_hash_is_stable_and_tracks_content() -> None:
    body1, hash1 = openapi_document("", "v1", [CONFIGMAP, NAMESPACE], DEFS)
    body2, hash2 = openapi_document("", "v1", [CONFIGMAP, NAMESPACE], DEFS)
    assert (body1, hash1) == (body2, hash2)
    assert hash1 == hashlib.sha512(body1).hexdigest().upper()
    # Equal content from distinct (uncached) inputs hashes the same.
    copy = ResourceType(**{f: getattr(CONFIGMAP, f) for f in CONFIGMAP.__dataclass_fields__})
    body3, hash3 = openapi_document("", "v1", [copy, NAMESPACE], DEFS)
    assert body3 == body1 and hash3 == hash1
    _, other = openapi_document("", "v1", [CONFIGMAP], DEFS)
    assert other != hash1


def test_verbs_limit_operations() -> None:
    readonly = ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True,
                            verbs=("get", "list"), schema_name="io.k8s.api.core.v1.ConfigMap")
    paths = doc("", "v1", [readonly])["paths"]
    assert set(paths["/api/v1/namespaces/{namespace}/configmaps"]) == {"get", "parameters"}
    assert set(paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]) == {"get", "parameters"}
    assert "watch" not in query_params(paths["/api/v1/configmaps"]["get"])


def test_kind_without_definition_gets_a_generic_schema() -> None:
    loose = ResourceType("stable.example.com", "v1", "CronTab", "crontabs", "crontab", True)
    document = doc("stable.example.com", "v1", [loose])
    schemas = document["components"]["schemas"]
    tab = schemas["com.example.stable.v1.CronTab"]
    assert tab["x-kubernetes-preserve-unknown-fields"] is True
    assert tab["x-kubernetes-group-version-kind"] == \
        [{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}]
    op = patch_op_for(document, {"group": "stable.example.com", "kind": "CronTab", "version": "v1"})
    assert op["operationId"] == "patchStableExampleComV1NamespacedCronTab"
    for ref in refs_in(document):
        assert ref[len(C):] in schemas


def test_documents_validate_as_openapi_3() -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    for group, types, defs in (("", [CONFIGMAP, NAMESPACE], DEFS), ("apps", [DEPLOYMENT], DEFS),
                               ("example.com", [WIDGET], WIDGET_DEFS)):
        validator.validate(doc(group, "v1", types, defs))
