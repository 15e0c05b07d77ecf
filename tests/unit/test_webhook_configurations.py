"""Webhook configurations checked as kube checks them, matching by rules and matchPolicy, and how a
webhook's answer is read (every malformed answer is a failed call, never a crash)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from apiserver.admission.engine import AdmissionRequest
from apiserver.admission.webhookcall import WebhookCallFailed, read_answer
from apiserver.admission.webhooks import compile_webhooks
from apiserver.builtin.kinds import builtin_types

DEPLOYMENTS = next(t for t in builtin_types() if t.kind == "Deployment")


def config(**hook: Any) -> dict[str, Any]:
    webhook = {"name": "check.example.com", "clientConfig": {"url": "https://hooks.example.com/check"},
               "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1beta1"], "operations": ["CREATE"],
                          "resources": ["deployments"]}], **hook}
    return {"metadata": {"name": "checks"}, "webhooks": [webhook]}


def fields(causes: list[Any]) -> list[str]:
    return [c.field for c in causes]


def test_a_valid_configuration_compiles() -> None:
    hooks, causes = compile_webhooks(config(matchConditions=[{"name": "c", "expression": "object != null"}]), True)
    assert causes == [] and hooks[0].name == "check.example.com" and len(hooks[0].match_conditions) == 1


@pytest.mark.parametrize(("hook", "field", "message"), [
    ({"name": "short.name"}, "webhooks[0].name", "should be a domain with at least three segments"),
    ({"clientConfig": {"service": {"namespace": "x", "name": "y"}}}, "webhooks[0].clientConfig.service",
     "a space has no Services with endpoints"),
    ({"clientConfig": {}}, "webhooks[0].clientConfig", "exactly one of url or service is required"),
    ({"clientConfig": {"url": "https://h.example.com/x?a=b"}}, "webhooks[0].clientConfig.url",
     "query parameters are not permitted"),
    ({"clientConfig": {"url": "https://h.example.com/x", "caBundle": "not base64!"}},
     "webhooks[0].clientConfig.caBundle", "base64"),
    ({"sideEffects": "Some"}, "webhooks[0].sideEffects", 'Unsupported value: "Some"'),
    ({"admissionReviewVersions": ["v1beta1"]}, "webhooks[0].admissionReviewVersions", "must include at least one"),
    ({"timeoutSeconds": 0}, "webhooks[0].timeoutSeconds", "between 1 and 30 seconds"),
    ({"failurePolicy": "Maybe"}, "webhooks[0].failurePolicy", 'Unsupported value: "Maybe"'),
    ({"matchPolicy": "Loose"}, "webhooks[0].matchPolicy", 'Unsupported value: "Loose"'),
    ({"reinvocationPolicy": "Always"}, "webhooks[0].reinvocationPolicy", 'Unsupported value: "Always"'),
    ({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}},
     "webhooks[0].namespaceSelector", '"Bogus" is not a valid label selector operator'),
    ({"objectSelector": {"matchLabels": {"a": "not valid!"}}}, "webhooks[0].objectSelector", "Invalid value"),
    ({"matchConditions": [{"name": "c", "expression": "object.("}]}, "webhooks[0].matchConditions[0].expression",
     "compilation failed"),
])
def test_bad_configurations_are_refused_with_kubes_paths(hook: dict[str, Any], field: str, message: str) -> None:
    _hooks, causes = compile_webhooks(config(**hook), True)
    assert field in fields(causes)
    assert message in next(c.message for c in causes if c.field == field)


def test_webhook_names_are_unique_within_a_configuration() -> None:
    doc = config()
    doc["webhooks"].append(dict(doc["webhooks"][0]))
    assert "webhooks[1].name" in fields(compile_webhooks(doc, False)[1])


def test_equivalent_matches_another_version_of_the_resource_and_exact_does_not() -> None:
    request = AdmissionRequest("root", DEPLOYMENTS, "CREATE", {"metadata": {"name": "d", "namespace": "n"}}, None,
                               None)
    assert compile_webhooks(config(matchPolicy="Equivalent"), False)[0][0].matches(request)
    assert not compile_webhooks(config(matchPolicy="Exact"), False)[0][0].matches(request)


def review(**response: Any) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "response": {"uid": "u1", **response}})


@pytest.mark.parametrize(("raw", "why"), [
    (b"<html>", "couldn't decode the response"),
    (orjson.dumps({"kind": "AdmissionReview"}), "expected webhook response of admission.k8s.io/v1"),
    (review(allowed=True).replace(b'"u1"', b'"u2"'), "expected response.uid='u1', got 'u2'"),
    (review(), "expected response.allowed to be true or false"),
    (review(allowed=True, patchType="MergePatch", patch="e30="), 'expected patchType "JSONPatch"'),
    (review(allowed=True, patchType="JSONPatch", patch="!!"), "the patch is not base64-encoded JSON"),
    (review(allowed=True, patchType="JSONPatch", patch=base64.b64encode(b'[{"op": "remove", "path": "/nope"}]')
            .decode()), 'JSON Patch: json patch operation 0 ("remove" "/nope") failed: the path does not exist'),
])
def test_malformed_answers_are_failed_calls(raw: bytes, why: str) -> None:
    with pytest.raises(WebhookCallFailed) as failed:
        read_answer(raw, "u1", {"metadata": {}})
    assert why in str(failed.value)


def test_a_refusal_keeps_the_webhooks_status_with_at_least_400() -> None:
    answer = read_answer(review(allowed=False, status={"code": 200, "message": "no"}), "u1", None)
    denial = answer.denial("check.example.com")
    assert (denial.code, denial.message) == (400, 'admission webhook "check.example.com" denied the request: no')
    silent = read_answer(review(allowed=False), "u1", None).denial("check.example.com")
    assert silent.message == 'admission webhook "check.example.com" denied the request without explanation'


def test_a_patch_is_applied_to_a_copy() -> None:
    current = {"metadata": {"name": "x"}}
    patch = base64.b64encode(b'[{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]').decode()
    answer = read_answer(review(allowed=True, patchType="JSONPatch", patch=patch, warnings=["w"]), "u1", current)
    assert answer.patched == {"metadata": {"name": "x", "labels": {"a": "b"}}}
    assert current == {"metadata": {"name": "x"}}
    assert answer.warnings == ["w"]
