"""What a workload object references (placement/references.py): every place a pod spec names a ConfigMap, Secret,
PVC or ServiceAccount, in every kind with a pod template, and the labels and selectors linking Services to pods."""

from __future__ import annotations

from typing import Any

import pytest

from placement.references import (
    CLAIMS_IT,
    ENV,
    MOUNTS,
    PULLS,
    RUNS_AS,
    Reference,
    pod_labels,
    references,
    service_selector,
)

POD_SPEC: dict[str, Any] = {
    "serviceAccountName": "web-sa",
    "imagePullSecrets": [{"name": "registry"}],
    "volumes": [
        {"name": "conf", "configMap": {"name": "web-conf"}},
        {"name": "tls", "secret": {"secretName": "web-tls"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}},
        {"name": "all", "projected": {"sources": [{"configMap": {"name": "projected-cm"}},
                                                   {"secret": {"name": "projected-secret"}},
                                                   {"serviceAccountToken": {"path": "token"}}]}},
        {"name": "scratch", "emptyDir": {}},
    ],
    "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
    "containers": [{"name": "web", "env": [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "web-conf", "key": "a"}}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "db-password", "key": "b", "optional": True}}},
        {"name": "C", "value": "plain"},
        {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "envFrom": [{"configMapRef": {"name": "env-cm"}}]}],
    "ephemeralContainers": [{"name": "debug", "envFrom": [{"configMapRef": {"name": "debug-cm"}}]}],
}

EXPECTED = sorted({
    Reference("serviceaccounts", "web-sa", RUNS_AS), Reference("secrets", "registry", PULLS),
    Reference("configmaps", "web-conf", MOUNTS), Reference("secrets", "web-tls", MOUNTS),
    Reference("persistentvolumeclaims", "web-data", CLAIMS_IT), Reference("configmaps", "projected-cm", MOUNTS),
    Reference("secrets", "projected-secret", MOUNTS), Reference("secrets", "init-env", ENV),
    Reference("configmaps", "web-conf", ENV), Reference("secrets", "db-password", ENV),
    Reference("configmaps", "env-cm", ENV), Reference("configmaps", "debug-cm", ENV),
})

TEMPLATE = {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": POD_SPEC}

WORKLOADS = [
    ("deployments.apps", {"spec": {"template": TEMPLATE}}),
    ("replicasets.apps", {"spec": {"template": TEMPLATE}}),
    ("statefulsets.apps", {"spec": {"template": TEMPLATE}}),
    ("daemonsets.apps", {"spec": {"template": TEMPLATE}}),
    ("jobs.batch", {"spec": {"template": TEMPLATE}}),
    ("cronjobs.batch", {"spec": {"jobTemplate": {"spec": {"template": TEMPLATE}}}}),
    ("replicationcontrollers", {"spec": {"template": TEMPLATE}}),
    ("podtemplates", {"template": TEMPLATE}),
    ("pods", TEMPLATE),
]


@pytest.mark.parametrize(("resource", "obj"), WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_every_kind_with_a_pod_template_references_what_its_pods_use(resource: str, obj: dict[str, Any]) -> None:
    assert list(references(resource, obj)) == EXPECTED
    assert pod_labels(resource, obj) == (("app", "web"), ("tier", "front"))


def test_objects_without_a_pod_template_reference_nothing() -> None:
    # The same shape in another group, or a kind without pods, is not read as a pod template.
    assert references("deployments.example.com", {"spec": {"template": TEMPLATE}}) == ()
    assert pod_labels("deployments.example.com", {"spec": {"template": TEMPLATE}}) is None
    assert references("configmaps", {"data": {"x": "y"}}) == ()
    assert pod_labels("services", {"spec": {"selector": {"app": "web"}}}) is None


def test_an_unnamed_service_account_and_malformed_parts_reference_nothing() -> None:
    spec = {"volumes": [None, "x", {"configMap": {}}, {"secret": {"secretName": ""}}, {"projected": {"sources": 3}}],
            "containers": [{"env": [{"valueFrom": {"configMapKeyRef": {"name": 7}}}], "envFrom": "bad"}],
            "imagePullSecrets": [{}], "serviceAccountName": ""}
    assert references("pods", {"spec": spec}) == ()
    assert references("deployments.apps", {"spec": {"template": "nope"}}) == ()
    assert pod_labels("deployments.apps", {"spec": {"template": {"spec": {}}}}) == ()


def test_the_deprecated_service_account_field_counts() -> None:
    assert references("pods", {"spec": {"serviceAccount": "old"}}) == (Reference("serviceaccounts", "old", RUNS_AS),)


def test_a_service_account_references_its_secrets() -> None:
    sa = {"imagePullSecrets": [{"name": "registry"}], "secrets": [{"name": "token"}]}
    assert references("serviceaccounts", sa) == (Reference("secrets", "registry", PULLS),
                                                 Reference("secrets", "token", MOUNTS))


def test_a_service_selector() -> None:
    assert service_selector("services", {"spec": {"selector": {"tier": "front", "app": "web"}}}) == (
        ("app", "web"), ("tier", "front"))
    assert service_selector("services", {"spec": {"type": "ExternalName"}}) is None  # selects no pod
    assert service_selector("services", {"spec": {"selector": {}}}) is None
    assert service_selector("configmaps", {"spec": {"selector": {"app": "web"}}}) is None
