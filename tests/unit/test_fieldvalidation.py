"""Decode-time checks: unknown fields (fieldValidation) and Go-decoder type errors."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from apiserver.definitions import load_definitions
from apiserver.fieldvalidation import (
    base64_error_offset,
    check,
    quantity_error,
    strict_decoding_message,
    time_error,
    type_errors,
    unknown_fields,
)

DEFS = load_definitions()
DEPLOYMENT = DEFS["io.k8s.api.apps.v1.Deployment"]
CONFIGMAP = DEFS["io.k8s.api.core.v1.ConfigMap"]
SECRET = DEFS["io.k8s.api.core.v1.Secret"]
SERVICE = DEFS["io.k8s.api.core.v1.Service"]
NAMESPACE = DEFS["io.k8s.api.core.v1.Namespace"]


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"note": "x"}, "creationTimestamp": None,
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
                               "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                        "args": ["--port", "80"],
                        "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                        "env": [{"name": "A", "value": "1"},
                                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                                      "requests": {"cpu": 0.25, "memory": 64000000}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                                           "periodSeconds": 5},
                        "livenessProbe": {"tcpSocket": {"port": 80}},
                    }],
                    "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
                    "nodeSelector": {"disk": "ssd"},
                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                },
            },
        },
        "status": {"replicas": 3, "conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}]},
    }


def service() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"type": "ClusterIP", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "https", "port": 443, "targetPort": "https"}]},
    }


def test_valid_objects_have_no_findings() -> None:
    assert check(deployment(), DEPLOYMENT, DEFS, "Deployment") == ([], [])
    assert check(service(), SERVICE, DEFS, "Service") == ([], [])
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "team-a", "labels": {"a": "b"}},
                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    assert check(namespace, NAMESPACE, DEFS, "Namespace") == ([], [])


def test_unknown_fields_deep_in_metadata_and_list_items() -> None:
    obj = deployment()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    container["ports"][0]["hostPortt"] = 1
    obj["metadata"]["foo"] = "bar"
    obj["spec"]["template"]["spec"]["volumes"][0]["configMap"]["nope"] = True
    assert unknown_fields(obj, DEPLOYMENT, DEFS) == [
        "metadata.foo",
        "spec.template.spec.containers[0].ports[0].hostPortt",
        "spec.template.spec.containers[0].imagePullPolicyy",
        "spec.template.spec.volumes[0].configMap.nope",
    ]
    assert strict_decoding_message(["metadata.foo", "spec.x"]) == \
        'strict decoding error: unknown field "metadata.foo", unknown field "spec.x"'


def test_top_level_type_meta_is_never_unknown() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}}}}}
    obj = {"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "w", "bogus": 1}, "spec": {"size": 1, "colour": "red"}}
    # A schema without metadata still gets ObjectMeta checked.
    assert unknown_fields(obj, schema, DEFS) == ["metadata.bogus", "spec.colour"]


def test_maps_accept_arbitrary_keys() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
          "data": {"any.key": "v", "ANOTHER_KEY": "w", "x-y_z": ""},
          "binaryData": {"blob": "aGVsbG8="}}
    assert check(cm, CONFIGMAP, DEFS, "ConfigMap") == ([], [])


def test_preserve_unknown_fields_and_raw_nodes() -> None:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        "raw": {"x-kubernetes-preserve-unknown-fields": True},
    }}
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"size": 2, "anything": {"deep": [1, 2]}},
           "raw": {"free": "form"},
           "status": {"phase": "Ready", "extra": 1}}
    assert unknown_fields(obj, schema, DEFS) == ["status.extra"]
    # RawExtension (ControllerRevision.data) takes any content.
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
                "revision": 1, "data": {"spec": {"whatever": [1, {"a": None}]}}}
    assert check(revision, DEFS["io.k8s.api.apps.v1.ControllerRevision"], DEFS,
                 "ControllerRevision") == ([], [])


def test_null_is_allowed_everywhere() -> None:
    obj = deployment()
    obj["spec"]["replicas"] = None
    obj["spec"]["template"]["spec"]["containers"][0]["ports"] = None
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = [None]
    obj["metadata"]["labels"] = {"a": None}
    assert check(obj, DEPLOYMENT, DEFS, "Deployment") == ([], [])
    assert check(None, DEPLOYMENT, DEFS, "Deployment") == ([], [])


def test_type_errors_match_go_decoder_wording() -> None:
    obj = deployment()
    obj["spec"]["replicas"] = "3"
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = {"name": "nginx"}
    assert type_errors(obj, DEPLOYMENT, DEFS, "Deployment") == [
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        "json: cannot unmarshal object into Go struct field "
        "Container.spec.template.spec.containers.image of type string",
    ]


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda o: o["spec"].__setitem__("replicas", 1.5),
     "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    (lambda o: o["spec"].__setitem__("replicas", 2**31),
     "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas "
     "of type int32"),
    (lambda o: o["spec"].__setitem__("paused", "yes"),
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"),
    (lambda o: o["spec"].__setitem__("template", []),
     "json: cannot unmarshal array into Go struct field DeploymentSpec.spec.template of type "
     "v1.PodTemplateSpec"),
    (lambda o: o["spec"]["template"]["spec"].__setitem__("containers", {"name": "x"}),
     "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of "
     "type []v1.Container"),
    (lambda o: o["metadata"].__setitem__("labels", {"a": 1}),
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    (lambda o: o["metadata"].__setitem__("labels", "a=b"),
     "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type "
     "map[string]string"),
    (lambda o: o.__setitem__("spec", 5),
     "json: cannot unmarshal number into Go struct field Deployment.spec of type v1.DeploymentSpec"),
    (lambda o: o["spec"]["strategy"]["rollingUpdate"].__setitem__("maxSurge", True),
     "json: cannot unmarshal bool into Go struct field "
     "RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32"),
    (lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
     .__setitem__("cpu", "lots"),
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (lambda o: o["metadata"].__setitem__("creationTimestamp", "yesterday"),
     'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    (lambda o: o["metadata"].__setitem__("creationTimestamp", 5),
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp "
     "of type string"),
])
def test_type_error_cases(mutate, message: str) -> None:
    obj = deployment()
    mutate(obj)
    assert type_errors(obj, DEPLOYMENT, DEFS, "Deployment") == [message]


def test_int_or_string_and_quantity_accept_both_forms() -> None:
    obj = deployment()
    rolling = obj["spec"]["strategy"]["rollingUpdate"]
    rolling["maxSurge"], rolling["maxUnavailable"] = 2, "10%"
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"cpu": 2, "memory": "1Gi"}
    obj["spec"]["replicas"] = 4.0  # integral float, as a YAML client may produce
    assert type_errors(obj, DEPLOYMENT, DEFS, "Deployment") == []


def test_secret_data_must_be_base64() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"ok": "aGVsbG8=", "bad": "not base64!"}, "stringData": {"plain": "text"}}
    assert check(secret, SECRET, DEFS, "Secret") == ([], ["illegal base64 data at input byte 3"])
    secret["data"] = {"n": 5}
    assert type_errors(secret, SECRET, DEFS, "Secret") == [
        "json: cannot unmarshal number into Go struct field Secret.data of type []uint8"]


@pytest.mark.parametrize(("text", "offset"), [
    ("aGVsbG8=", None), ("aGVsbA==", None), ("", None), ("aGVs\nbG8=", None),
    ("aGVsbG8", 4), ("aGVsbA=", 7), ("a===", 1), ("aGVsbG8=x", 8), ("ab!d", 2), ("aGVs=", 4),
])
def test_base64_offsets_follow_go(text: str, offset: int | None) -> None:
    assert base64_error_offset(text) == offset


@pytest.mark.parametrize(("text", "ok"), [
    ("1", True), ("500m", True), ("1.5Gi", True), ("1e3", True), ("-2", True), ("0.1", True),
    ("abc", False), ("1KK", False), ("", False), ("1.5.5", False),
])
def test_quantity_formats(text: str, ok: bool) -> None:
    assert (quantity_error(text) is None) is ok


@pytest.mark.parametrize(("text", "message"), [
    ("2024-05-01T10:00:00Z", None),
    ("2024-05-01T10:00:00.123456+02:00", None),
    ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
    ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
    ("2024-02-29T00:00:00Z", None),
    ("2024-05-01", 'parsing time "2024-05-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'),
    ("2024-05-01T10:00:00Zjunk", 'parsing time "2024-05-01T10:00:00Zjunk": extra text: "junk"'),
])
def test_time_formats(text: str, message: str | None) -> None:
    assert time_error(text) == message


def test_kind_names_the_top_level_struct() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "format": "int32"}}}}}
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": []}
    assert type_errors(obj, schema, DEFS, "Widget") == [
        "json: cannot unmarshal array into Go struct field Widget.spec of type struct"]


def test_fresh_schema_dicts_are_not_confused() -> None:
    # Schemas built per request (custom resources) must not hit another schema's cache entry.
    for size_type in ("integer", "string") * 50:
        schema = {"type": "object", "properties": {"size": {"type": size_type}}}
        errors = type_errors({"size": 1}, schema, DEFS, "Widget")
        assert bool(errors) is (size_type == "string")


def test_many_objects_quickly() -> None:
    objects = []
    for i in range(1200):
        obj = copy.deepcopy(deployment())
        obj["metadata"]["name"] = f"web-{i}"
        objects.append(obj)
    started = time.perf_counter()
    for obj in objects:
        assert check(obj, DEPLOYMENT, DEFS, "Deployment") == ([], [])
    # Generous bound: a full walk per object must stay far from request-latency scale.
    assert time.perf_counter() - started < 3.0
