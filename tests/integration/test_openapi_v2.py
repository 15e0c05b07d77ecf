"""``/openapi/v2`` through real kubectl: the client-side validation it does from v2 (Lists, kinds the
space does not serve) and the document itself (JSON, gnostic protobuf, ETag, 406)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests import gnostic
from tests.harness import Hub, kubectl_yaml, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
WIDGET_GVK = {"group": "example.spacehub.io", "kind": "Widget", "version": "v1"}
DIGEST = "sha256:" + "a" * 64


def install_widgets(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", "--timeout=10s",
                space=space)


def configmap(name: str, **extra: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v"}, **extra}


def widget(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"image": f"registry.example/w@{DIGEST}", "owner": "team-a", **spec}}


def as_list(*items: dict[str, object]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)})


def test_applying_a_kind_the_space_does_not_serve_says_no_matches_for_kind(hub: Hub, space: str) -> None:
    foo = yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Foo",
                          "metadata": {"name": "f1", "namespace": "default"}})
    out = hub.kubectl("apply", "-f", "-", space=space, input=foo, check=False)
    assert out.returncode == 1
    assert 'no matches for kind "Foo" in version "example.com/v1"' in out.stderr
    assert "ensure CRDs are installed first" in out.stderr
    # A kind missing from a group/version the space does serve takes kubectl's v2 fallback path.
    core = yaml.safe_dump({"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "f1"}})
    out = hub.kubectl("apply", "-f", "-", space=space, input=core, check=False)
    assert 'no matches for kind "Foo" in version "v1"' in out.stderr


def test_a_list_of_configmaps_and_a_custom_resource_applies_with_default_validation(
        hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    out = hub.kubectl("apply", "-f", "-", space=space,
                      input=as_list(configmap("c1"), configmap("c2"), widget("w1", replicas=2)))
    assert out.stdout.split("\n")[:3] == ["configmap/c1 created", "configmap/c2 created",
                                          "widget.example.spacehub.io/w1 created"]
    names = hub.kubectl("get", "configmaps", "-n", "default", "-o", "name", space=space).stdout.split()
    assert names == ["configmap/c1", "configmap/c2", "configmap/kube-root-ca.crt"]
    got = kubectl_yaml(hub.kubectl("get", "widget", "w1", "-n", "default", "-o", "yaml", space=space))
    assert got["spec"]["replicas"] == 2


def test_a_list_item_with_an_unknown_field_is_refused_by_kubectls_validation(hub: Hub, space: str) -> None:
    install_widgets(hub, space)
    out = hub.kubectl("apply", "-f", "-", space=space, check=False,
                      input=as_list(configmap("fine"), configmap("c3", bogus=1)))
    assert out.returncode == 1
    assert ('error validating data: ValidationError(ConfigMap): unknown field "bogus" in '
            'io.k8s.api.core.v1.ConfigMap') in out.stderr
    out = hub.kubectl("apply", "-f", "-", space=space, check=False,
                      input=as_list(widget("w2", extra=True)))
    assert ('ValidationError(Widget.spec): unknown field "extra" in '
            'io.spacehub.example.v1.Widget.spec') in out.stderr
    # Validation refuses the whole document before anything is sent.
    assert hub.kubectl("get", "configmaps", "-n", "default", "-o", "name", space=space).stdout == \
        "configmap/kube-root-ca.crt\n"  # every namespace's


def test_a_list_item_of_a_kind_the_space_does_not_serve_says_no_matches_for_kind(
        hub: Hub, space: str) -> None:
    foo = {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f1", "namespace": "default"}}
    out = hub.kubectl("apply", "-f", "-", space=space, check=False, input=as_list(configmap("c4"), foo))
    assert out.returncode == 1
    assert 'no matches for kind "Foo" in version "example.com/v1"' in out.stderr
    # kubectl applies the items it can map, as against kube-apiserver.
    assert out.stdout == "configmap/c4 created\n"


def test_a_crds_kind_appears_in_v2_once_established_and_explain_still_works(hub: Hub, space: str) -> None:
    with hub.client() as c:
        def widget_gvks() -> list[object]:
            r = c.get(f"/clusters/{space}/openapi/v2", headers={"Accept": PROTOBUF})
            assert r.status_code == 200, r.text
            schema = gnostic.definitions(r.content).get("io.spacehub.example.v1.Widget", {})
            return list(schema.get("extensions", {}).get("x-kubernetes-group-version-kind", []))

        assert widget_gvks() == []
        hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
        assert wait_for(widget_gvks, timeout=10, message="Widget in OpenAPI v2") == [WIDGET_GVK]
        patch = gnostic.patch_operations(c.get(f"/clusters/{space}/openapi/v2",
                                               headers={"Accept": PROTOBUF}).content)
        gvk, params = patch["/apis/example.spacehub.io/v1/namespaces/{namespace}/widgets/{name}"]
        assert gvk == WIDGET_GVK and "fieldValidation" in params
    explained = hub.kubectl("explain", "widget.spec", space=space).stdout
    assert "What the widget should run." in explained


def test_the_document_as_json_and_protobuf_with_one_etag_304_and_406(hub: Hub, space: str) -> None:
    url = f"/clusters/{space}/openapi/v2"
    with hub.client() as c:
        as_json = c.get(url)
        assert as_json.status_code == 200
        assert as_json.headers["content-type"] == "application/json"
        assert as_json.headers["vary"] == "Accept"
        doc = as_json.json()
        assert doc["swagger"] == "2.0"
        assert doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"] == \
            [{"group": "", "kind": "ConfigMap", "version": "v1"}]
        etag = as_json.headers["etag"]

        as_proto = c.get(url, headers={"Accept": PROTOBUF})
        assert as_proto.status_code == 200
        assert as_proto.headers["content-type"] == PROTOBUF_ANSWER
        assert as_proto.headers["etag"] == etag
        assert set(gnostic.definitions(as_proto.content)) == set(doc["definitions"])

        unchanged = c.get(url, headers={"Accept": PROTOBUF, "If-None-Match": etag})
        assert unchanged.status_code == 304 and unchanged.content == b""
        assert c.get(url, headers={"If-None-Match": '"other"'}).status_code == 200
        assert c.get(url, headers={"Accept": "application/yaml"}).status_code == 406
