"""x-kubernetes-validations: CRD-creation errors and rule evaluation on create and update, as upstream."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from apimachinery.errors import Cause
from cel import crd_rules
from cel.crd_rules import compile_crd_rules, validate_object

CORPUS = Path("/work/shared/corpus/agent-substrate/crds")


def obj_schema(spec_props: dict[str, Any], spec_rules: list[dict[str, Any]] | None = None,
               **spec_extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": spec_props, **spec_extra}
    if spec_rules:
        spec["x-kubernetes-validations"] = spec_rules
    return {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                             "metadata": {"type": "object"}, "spec": spec}}


def obj(spec: dict[str, Any], name: str = "x") -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "labels": {"a": "b"}},
            "spec": spec}


def compiled(schema: dict[str, Any]) -> crd_rules.CompiledRules:
    rules, causes = compile_crd_rules(schema)
    assert causes == []
    return rules


# --- CRD creation -------------------------------------------------------------------------------


def test_compile_error_is_reported_at_the_rule_with_kube_wording() -> None:
    _, causes = compile_crd_rules(obj_schema({"replicas": {"type": "integer"}}, [{"rule": "self.replicass > 0"}]))
    assert len(causes) == 1
    cause = causes[0]
    assert cause.type == "FieldValueInvalid"
    assert cause.field == "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert cause.message.startswith('Invalid value: apiextensions.ValidationRule{Rule:"self.replicass > 0", '
                                    'Message:"", MessageExpression:"", '
                                    'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
                                    'OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: '
                                    "undefined field 'replicass'")


def test_message_expression_compile_error_has_its_own_path() -> None:
    _, causes = compile_crd_rules(obj_schema({"n": {"type": "integer"}},
                                             [{"rule": "self.n > 0", "messageExpression": "'n is ' + nope"}]))
    assert [c.field for c in causes] == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression"]
    assert "messageExpression compilation failed: ERROR: <input>:1:11: undeclared reference to 'nope'" in \
        causes[0].message


def test_rule_must_be_boolean_and_message_expression_a_string() -> None:
    _, causes = compile_crd_rules(obj_schema({"n": {"type": "integer"}}, [
        {"rule": "self.n + 1"}, {"rule": "true", "messageExpression": "self.n"}]))
    assert [c.message.rsplit(": ", 1)[1] for c in causes] == [
        "cel expression must evaluate to a bool", "messageExpression must evaluate to a string"]


def test_bad_reason_field_path_and_empty_rule_are_rejected() -> None:
    _, causes = compile_crd_rules(obj_schema({"n": {"type": "integer"}}, [
        {"rule": "true", "reason": "Nope"}, {"rule": "true", "fieldPath": ".nothere"}, {"rule": " "}]))
    prefix = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert [(c.type, c.field) for c in causes] == [
        ("FieldValueNotSupported", f"{prefix}[0].reason"),
        ("FieldValueInvalid", f"{prefix}[1].fieldPath"),
        ("FieldValueRequired", f"{prefix}[2].rule")]


def test_escaped_property_names_and_root_metadata_restrictions() -> None:
    schema = obj_schema({"max-size": {"type": "integer"}}, [{"rule": "self.max__dash__size < 10"}])
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name.startsWith('w')"}]
    rules = compiled(schema)
    assert validate_object(rules, obj({"max-size": 3}, name="widget"), None) == []
    assert [c.field for c in validate_object(rules, obj({"max-size": 30}, name="other"), None)] == ["", "spec"]
    _, causes = compile_crd_rules({**schema, "x-kubernetes-validations": [{"rule": "has(self.metadata.labels)"}]})
    assert "undefined field 'labels'" in causes[0].message


def test_unbounded_nested_rule_exceeds_the_estimated_cost_budget() -> None:
    schema = obj_schema({"items": {"type": "array", "items": {"type": "string"}}},
                        [{"rule": "self.items.all(a, self.items.all(b, a == b || a != b))"}])
    _, causes = compile_crd_rules(schema)
    assert causes[0].type == "FieldValueForbidden"
    assert causes[0].field.endswith("x-kubernetes-validations[0].rule")
    assert causes[0].message == ("Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try "
                                 "simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
                                 "arrays, maps, and strings are declared)")
    assert any(c.field == "spec.validation.openAPIV3Schema" and "estimated rule cost total for entire OpenAPIv3 "
               "schema exceeds budget" in c.message for c in causes)
    bounded = obj_schema({"items": {"type": "array", "maxItems": 20,
                                    "items": {"type": "string", "maxLength": 64}}},
                         [{"rule": "self.items.all(a, self.items.all(b, a == b || a != b))"}])
    assert compile_crd_rules(bounded)[1] == []


def test_old_self_under_an_atomic_list_is_rejected() -> None:
    schema = obj_schema({"xs": {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {
        "v": {"type": "string", "maxLength": 10}}, "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v"}]}}})
    _, causes = compile_crd_rules(schema)
    assert "oldSelf cannot be used on the uncorrelatable portion of the schema within " \
           "spec.validation.openAPIV3Schema.properties[spec].properties[xs].items" in causes[0].message


# --- validation ---------------------------------------------------------------------------------


def test_failed_rule_messages_and_paths() -> None:
    rules = compiled(obj_schema(
        {"replicas": {"type": "integer"},
         "containers": {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {"image": {
             "type": "string", "maxLength": 256, "x-kubernetes-validations": [{"rule": "self.contains('@')",
                                                             "message": "pin it"}]}}}},
         "labels": {"type": "object", "maxProperties": 10, "additionalProperties": {
             "type": "string", "maxLength": 64, "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}}},
        [{"rule": "self.replicas <= 5"},
         {"rule": "self.replicas != 4", "fieldPath": ".replicas", "reason": "FieldValueForbidden",
          # format(), not '…' + string(…): string() of an int has no size bound upstream, so concatenating it
          # makes the messageExpression's estimated cost unbounded and kube-apiserver refuses the CRD.
          "messageExpression": "'replicas %d is unlucky'.format([self.replicas])"}]))
    causes = validate_object(rules, obj({"replicas": 4.0, "containers": [{"image": "ok@sha"}, {"image": "nope"}],
                                         "labels": {"k": "bad"}}), None)
    assert causes == [
        Cause("FieldValueForbidden", "Forbidden: replicas 4 is unlucky", "spec.replicas"),
        Cause("FieldValueInvalid", 'Invalid value: "string": pin it', "spec.containers[1].image"),
        Cause("FieldValueInvalid", "Invalid value: \"string\": failed rule: self != 'bad'", "spec.labels[k]"),
    ]
    causes = validate_object(rules, obj({"replicas": 9}), None)
    assert causes == [Cause("FieldValueInvalid", 'Invalid value: "object": failed rule: self.replicas <= 5', "spec")]


@pytest.mark.parametrize(("reason", "expected"), [
    ("FieldValueRequired", Cause("FieldValueRequired", "Required value: need x", "spec")),
    ("FieldValueDuplicate", Cause("FieldValueDuplicate", 'Duplicate value: "object"', "spec")),
    ("FieldValueInvalid", Cause("FieldValueInvalid", 'Invalid value: "object": need x', "spec")),
])
def test_reason_selects_the_cause_type(reason: str, expected: Cause) -> None:
    rules = compiled(obj_schema({"x": {"type": "string"}}, [{"rule": "has(self.x)", "message": "need x",
                                                              "reason": reason}]))
    assert validate_object(rules, obj({}), None) == [expected]


def test_message_expression_falls_back_to_message_on_error_or_blank() -> None:
    rules = compiled(obj_schema({"x": {"type": "string"}}, [
        {"rule": "false", "message": "static", "messageExpression": "self.x"},
        {"rule": "false", "messageExpression": "'   '"}]))
    causes = validate_object(rules, obj({}), None)
    assert [c.message for c in causes] == ['Invalid value: "object": static',
                                           'Invalid value: "object": failed rule: false']


def test_evaluation_errors_use_upstream_wording() -> None:
    rules = compiled(obj_schema({"x": {"x-kubernetes-int-or-string": True}, "m": {
        "type": "object", "additionalProperties": {"type": "string"}}},
        [{"rule": "self.m['missing'] == 'x'"}, {"rule": "self.x + 1 > 0", "message": "int please"}]))
    causes = validate_object(rules, obj({"x": "str", "m": {}}), None)
    assert causes[0].message == ("Invalid value: \"object\": no such key: missing evaluating rule: "
                                 "self.m['missing'] == 'x'")
    assert causes[1].message.startswith("Invalid value: \"object\": 'no such overload")
    assert causes[1].message.endswith("': call arguments did not match a supported operator, function or macro "
                                      "signature for rule: int please")


def test_transition_rule_is_skipped_on_create_and_enforced_on_update() -> None:
    rules = compiled(obj_schema({"x": {"type": "string"}}, [{"rule": "self == oldSelf", "message": "immutable"}]))
    assert validate_object(rules, obj({"x": "a"}), None) == []
    assert validate_object(rules, obj({"x": "a"}), obj({"x": "a"})) == []
    assert validate_object(rules, obj({"x": "b"}), obj({"x": "a"})) == [
        Cause("FieldValueInvalid", 'Invalid value: "object": immutable', "spec")]


def test_transition_rule_on_a_newly_added_field_is_skipped() -> None:
    rules = compiled(obj_schema({"x": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "immutable"}]}}))
    assert validate_object(rules, obj({"x": "b"}), obj({})) == []
    assert len(validate_object(rules, obj({"x": "b"}), obj({"x": "a"}))) == 1


def test_optional_old_self_runs_on_create_too() -> None:
    rules = compiled(obj_schema({"x": {"type": "string"}}, [
        {"rule": "!oldSelf.hasValue() ? self.x == 'initial' : oldSelf.value().x == self.x || self.x == 'reset'",
         "optionalOldSelf": True, "message": "bad transition"}]))
    assert validate_object(rules, obj({"x": "initial"}), None) == []
    assert len(validate_object(rules, obj({"x": "other"}), None)) == 1
    assert validate_object(rules, obj({"x": "reset"}), obj({"x": "initial"})) == []
    assert len(validate_object(rules, obj({"x": "zzz"}), obj({"x": "initial"}))) == 1


def test_list_map_items_correlate_by_key_for_transition_rules() -> None:
    rules = compiled(obj_schema({"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                  "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port fixed"}]}}}))
    old = obj({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]})
    reordered = obj({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]})
    assert validate_object(rules, reordered, old) == []
    changed = obj({"ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}]})
    assert validate_object(rules, changed, old) == [
        Cause("FieldValueInvalid", 'Invalid value: "object": port fixed', "spec.ports[0]")]


def test_whole_numbers_are_integers_and_root_sees_only_name_and_generate_name() -> None:
    schema = obj_schema({"n": {"type": "integer"}}, [{"rule": "type(self.n) == int && self.n / 2 == 1"}])
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name == 'x' && !has(self.metadata.generateName)"}]
    rules = compiled(schema)
    doc = obj({"n": 2.0})
    doc["metadata"]["namespace"] = "default"
    assert validate_object(rules, doc, None) == []
    _, causes = compile_crd_rules({**schema, "x-kubernetes-validations": [{"rule": "self.metadata.namespace != ''"}]})
    assert "undefined field 'namespace'" in causes[0].message


def test_per_call_cost_limit_stops_all_further_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    # A rule the estimate lets through can still exceed the runtime limit; shrink it to keep the test fast.
    monkeypatch.setattr(crd_rules, "PER_CALL_LIMIT", 2000)
    rules = compiled(obj_schema({"xs": {"type": "array", "maxItems": 100, "items": {"type": "integer"}}}, [
        {"rule": "self.xs.all(a, self.xs.all(b, a == b || a != b))", "message": "quadratic"},
        {"rule": "false", "message": "never reached"}]))
    causes = validate_object(rules, obj({"xs": list(range(100))}), None)
    assert len(causes) == 1
    assert causes[0].message == ("Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': "
                                 "no further validation rules will be run due to call cost exceeds limit for rule: "
                                 "quadratic")


def test_total_runtime_budget_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crd_rules, "RUNTIME_CEL_COST_BUDGET", 50)
    rules = compiled(obj_schema({"xs": {"type": "array", "maxItems": 100, "items": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]}}}))
    causes = validate_object(rules, obj({"xs": list(range(100))}), None)
    assert causes[-1].message == ('Invalid value: "integer": validation failed due to running out of cost budget, '
                                  "no further validation rules will be run")


# --- the agent-substrate CRDs ---------------------------------------------------------------------


def _corpus_schemas(name: str) -> list[dict[str, Any]]:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    crd = next(d for d in yaml.safe_load_all(path.read_text()) if d)
    return [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]]


@pytest.mark.parametrize("name", ["ate.dev_actortemplates.yaml", "ate.dev_workerpools.yaml",
                                  "ate.dev_sandboxconfigs.yaml"])
def test_corpus_crd_rules_all_compile(name: str) -> None:
    for schema in _corpus_schemas(name):
        _, causes = compile_crd_rules(schema)
        assert causes == []


def _actor_template(**spec: Any) -> dict[str, Any]:
    base = {"pauseImage": "registry.k8s.io/pause@sha256:abc", "snapshotsConfig": {"location": "gs://bucket/x"},
            "containers": [{"name": "main", "image": "example.com/app@sha256:def"}]}
    base.update(spec)
    return {"apiVersion": "ate.dev/v1alpha1", "kind": "ActorTemplate", "metadata": {"name": "t"}, "spec": base}


def test_corpus_actor_template_rules() -> None:
    rules, causes = compile_crd_rules(_corpus_schemas("ate.dev_actortemplates.yaml")[0])
    assert causes == []
    good = _actor_template()
    assert validate_object(rules, good, None) == []

    unpinned = _actor_template(containers=[{"name": "main", "image": "busybox:latest"}])
    assert validate_object(rules, unpinned, None) == [Cause(
        "FieldValueInvalid",
        'Invalid value: "string": All images must be pinned (changing the image invalidates snapshots)',
        "spec.containers[0].image")]

    changed = copy.deepcopy(good)
    changed["spec"]["snapshotsConfig"]["location"] = "gs://bucket/y"
    assert validate_object(rules, changed, good) == [
        Cause("FieldValueInvalid", 'Invalid value: "object": Spec is immutable', "spec")]

    microvm = _actor_template(sandboxClass="microvm", volumes=[{"name": "data", "durableDir": {}}])
    assert validate_object(rules, microvm, None) == [Cause(
        "FieldValueInvalid", "Invalid value: \"object\": DurableDir volumes are not supported when sandboxClass is "
        "'microvm'", "spec")]
    gvisor = _actor_template(sandboxClass="gvisor", volumes=[{"name": "data", "durableDir": {}}])
    assert validate_object(rules, gvisor, None) == []
