"""Defaults and validation of the kinds a space only stores (Lease, PodTemplate, ReplicationController,
CSIStorageCapacity), against upstream's rules; the integration tests drive the same through kubectl."""

from __future__ import annotations

from typing import Any

from tests.builtin_objects import causes, create


def defaulted_causes(kind: str, obj: dict[str, Any]) -> list[tuple[str, str]]:
    """Validation as the handlers run it: after the kind's defaulting."""
    return causes(kind, create(kind, obj))


TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}


def test_lease_numbers_must_make_sense_and_everything_else_is_the_holders() -> None:
    assert causes("Lease", {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}}) == []
    assert causes("Lease", {}) == []
    assert causes("Lease", {"spec": {"leaseDurationSeconds": -1, "leaseTransitions": -2}}) == [
        ("spec.leaseDurationSeconds", "Invalid value: -1: must be greater than 0"),
        ("spec.leaseTransitions", "Invalid value: -2: must be greater than or equal to 0")]


def test_a_replication_controller_defaults_its_selector_and_labels_from_its_template() -> None:
    rc = create("ReplicationController", {"metadata": {"name": "rc"}, "spec": {"template": TEMPLATE}})
    assert rc["spec"]["selector"] == {"app": "web"} and rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1 and rc["status"] == {"replicas": 0}
    assert rc["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    # Given ones are kept.
    own = create("ReplicationController", {"metadata": {"name": "rc", "labels": {"mine": "x"}},
                                           "spec": {"selector": {"app": "web"}, "replicas": 0, "template": TEMPLATE}})
    assert own["metadata"]["labels"] == {"mine": "x"} and own["spec"]["replicas"] == 0


def test_a_replication_controller_needs_a_selector_its_template_matches() -> None:
    assert causes("ReplicationController", {"spec": {}}) == [("spec.selector", "Required value")]
    mismatch = defaulted_causes("ReplicationController", {"spec": {"selector": {"app": "db"}, "template": TEMPLATE}})
    assert mismatch == [("spec.template.metadata.labels",
                         'Invalid value: {"app":"web"}: `selector` does not match template `labels`')]
    never = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
    assert defaulted_causes("ReplicationController", {"spec": {"selector": {"app": "web"}, "template": never}}) == [
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')]


def test_a_pod_template_accepts_every_restart_policy_and_validates_its_pod() -> None:
    never = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
    assert defaulted_causes("PodTemplate", {"template": never}) == []
    assert causes("PodTemplate", {}) == [("template", "Required value")]


def test_a_csi_storage_capacity_names_a_valid_class_and_no_negative_sizes() -> None:
    assert causes("CSIStorageCapacity", {"storageClassName": "fast", "capacity": "1Gi"}) == []
    assert causes("CSIStorageCapacity", {"storageClassName": "Fast_", "capacity": "-1Gi",
                                         "maximumVolumeSize": "2Gi"}) == [
        ("storageClassName", "Invalid value: \"Fast_\": a lowercase RFC 1123 subdomain must consist of lower case "
                             "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                             "character (e.g. 'example.com', regex used for validation is "
                             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ("capacity", 'Invalid value: "-1Gi": must be greater than or equal to 0')]
