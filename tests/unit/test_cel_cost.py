"""Static CEL cost of CRD rules: our estimate equals kube-apiserver's, and so does what it accepts.

Every expected cost is worked out by hand from upstream's model (cel-go ``checker/cost.go``, Kubernetes
``library/cost.go``, ``common/schemas.go`` SchemaDeclType sizes, apiextensions ``getExpressionCost``):

- identifiers and field selections on objects and maps cost 1, constants 0, ``has()`` 0 plus its operand;
- a call costs 1 plus its arguments unless the function has its own estimate;
- a macro is its comprehension: range + ``@result`` init (0) + result ``@result`` (1) + size(range) * (step +
  loop condition); for ``all`` the condition ``@not_strictly_false(@result)`` is 2 and the step
  ``@result && body`` is 1 + body (``&&`` adds nothing of its own);
- ``s.matches(re)`` costs ceil((size(s) + 1) * 0.1) * ceil(len(re) * 0.25) plus its arguments;
- sizes: a string with ``maxLength`` n has 4n (bytes), an unbounded one 3,145,726; a map key 0 (kube's
  StringType key has no MaxElements); an unbounded list of strings 3,145,726 // 3 = 1,048,575 items;
- a rule runs (product of the ancestors' maxItems/maxProperties) times, or — under any unbounded list or
  map — 3,145,728 // (MinSerializedSize(self) + 1) times; a messageExpression's cost is not multiplied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apimachinery.errors import Cause
from apiserver.builtin.strategies import CustomResourceDefinitionStrategy as BuiltinCRDStrategy
from apiserver.customresources import CustomResourceDefinitionStrategy
from cel.crd_rules import compile_crd_rules

SCHEMA = "spec.validation.openAPIV3Schema"
SPEC = f"{SCHEMA}.properties[spec]"
CORPUS = Path("/work/shared/corpus")
_ADVICE = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
           "strings are declared)")

RE = "'^[a-z]+$'"   # 8 characters: ceil(8 * 0.25) = 2


def crd_schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                             "metadata": {"type": "object"}, "spec": spec}}


def obj(properties: dict[str, Any], rules: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if rules:
        out["x-kubernetes-validations"] = [{"rule": r} for r in rules]
    return out


def ruled(schema: dict[str, Any], *rules: str | dict[str, Any]) -> dict[str, Any]:
    specs = [r if isinstance(r, dict) else {"rule": r} for r in rules]
    return {**schema, "x-kubernetes-validations": specs}


def string(max_length: int | None = None) -> dict[str, Any]:
    return {"type": "string"} if max_length is None else {"type": "string", "maxLength": max_length}


def array(items: dict[str, Any], max_items: int | None = None) -> dict[str, Any]:
    out = {"type": "array", "items": items}
    return out if max_items is None else {**out, "maxItems": max_items}


def string_map(values: dict[str, Any], max_properties: int | None = None) -> dict[str, Any]:
    out = {"type": "object", "additionalProperties": values}
    return out if max_properties is None else {**out, "maxProperties": max_properties}


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def over_budget(what: str, factor: str) -> str:
    return f"{what} exceeds budget by factor of {factor} {_ADVICE}"


# --- the table ------------------------------------------------------------------------------------

# Gateway-shaped: spec.infrastructure.annotations, a map of at most 8 strings of at most 4096 characters.
ANNOTATIONS = f"{SPEC}.properties[infrastructure].properties[annotations]"


def gateway(*rules: str) -> dict[str, Any]:
    return crd_schema(obj({"infrastructure": obj({"annotations": ruled(string_map(string(4096), 8), *rules)})}))


CASES: list[tuple[str, dict[str, Any], str, int, bool]] = [
    # (shape, schema, rule path, upstream cost, accepted)
    (
        # self 1 + true 0 + @result 1 + 8 keys * (step 1 + [k 1 + matches ceil((0+1)*0.1)=1 * 2 = 2] + loop 2)
        # = 2 + 8 * 6 = 50; spec and infrastructure are objects, so it runs once.
        "map keys matching a regex (Gateway)",
        gateway(f"self.all(k, k.matches({RE}))"), f"{ANNOTATIONS}.x-kubernetes-validations[0].rule", 50, True,
    ),
    (
        # self[k] = 1 + self 1 + k 1 = 3; .size() 1 + 3 = 4; <= 4096 is 1 + 4 = 5; step 1 + 5 = 6
        # 2 + 8 * (6 + 2) = 66
        "map values' length (Gateway)",
        gateway("self.all(k, self[k].size() <= 4096)"), f"{ANNOTATIONS}.x-kubernetes-validations[0].rule", 66, True,
    ),
    (
        # k.split('/') is kube's split: size(k)=0 * 0.2 = 0, plus k 1 = 1; [0] = 1 + 1 = 2 (its path is
        # @items of an unnamed list, which upstream resolves to the rule's own node); .size() 3; <= 253 is 4;
        # step 5; 2 + 8 * (5 + 2) = 58
        "map keys split on '/' (Gateway)",
        gateway("self.all(k, k.split('/')[0].size() <= 253)"), f"{ANNOTATIONS}.x-kubernetes-validations[0].rule",
        58, True,
    ),
    (
        # has(self.value) = presence 0 + self 1 = 1. routes and matchers are unbounded lists, so the rule runs
        # as often as the smallest matcher fits in a request: {"name":""} is 2 + (4 + 2 + 4) = 12 bytes,
        # 3,145,728 // 13 = 241,979 times: 241,979.
        "has() two unbounded lists deep (AlertmanagerConfig)",
        crd_schema(obj({"routes": array(obj({"matchers": array(ruled(
            obj({"name": string(), "value": string()}, required=["name"]), "has(self.value)"))}))})),
        f"{SPEC}.properties[routes].items.properties[matchers].items.x-kubernetes-validations[0].rule", 241_979, True,
    ),
    (
        # x: unbounded string, 3,145,726: matches = ceil(3,145,727 * 0.1) = 314,573 * 2 = 629,146, plus x 1;
        # step 1 + 629,147 = 629,148; 1,048,575 items: 2 + 1,048,575 * (629,148 + 2) = 659,710,961,252
        # = 65,971x the 10,000,000 budget: "more than 100x".
        "unbounded list of unbounded strings matching a regex",
        crd_schema(obj({"hosts": ruled(array(string()), f"self.all(x, x.matches({RE}))")})),
        f"{SPEC}.properties[hosts].x-kubernetes-validations[0].rule", 659_710_961_252, False,
    ),
    (
        # as above with maxItems 100: 2 + 100 * 629,150 = 62,915,002 = 6.2915x: "6.3x"
        "100 unbounded strings matching a regex",
        crd_schema(obj({"hosts": ruled(array(string(), 100), f"self.all(x, x.matches({RE}))")})),
        f"{SPEC}.properties[hosts].x-kubernetes-validations[0].rule", 62_915_002, False,
    ),
    (
        # self: a string of maxLength 63, 252 bytes: matches = ceil(253 * 0.1) = 26 * 2 = 52, plus self 1 = 53.
        # It runs 10 groups * 1 (object) * 5 members = 50 times: 2,650.
        "bounded nested lists multiply",
        crd_schema(obj({"groups": array(obj({"members": array(ruled(string(63), f"self.matches({RE})"), 5)}), 10)})),
        f"{SPEC}.properties[groups].items.properties[members].items.x-kubernetes-validations[0].rule", 2_650, True,
    ),
    (
        # self.port > 0 = 1 + (self 1 + .port 1) + 0 = 3; ports is unbounded, {"port":0} is 2 + (4 + 1 + 4) = 11
        # bytes, 3,145,728 // 12 = 262,144 runs: 786,432
        "object inside an unbounded list",
        crd_schema(obj({"ports": array(ruled(obj({"port": {"type": "integer"}}, required=["port"]),
                                             "self.port > 0"))})),
        f"{SPEC}.properties[ports].items.x-kubernetes-validations[0].rule", 786_432, True,
    ),
    (
        # self.size() > 0 = 1 + (1 + self 1) = 3; the bounded list (maxItems 3) sits under an unbounded one, so
        # the string's own min size counts: "" is 2 bytes, 3,145,728 // 3 = 1,048,576 runs: 3,145,728
        "bounded list under an unbounded list",
        crd_schema(obj({"ports": array(obj({"names": array(ruled(string(10), "self.size() > 0"), 3)}))})),
        f"{SPEC}.properties[ports].items.properties[names].items.x-kubernetes-validations[0].rule", 3_145_728, True,
    ),
]


@pytest.mark.parametrize(("shape", "schema", "path", "upstream", "accepted"), CASES, ids=[c[0] for c in CASES])
def test_rule_cost_matches_upstream(shape: str, schema: dict[str, Any], path: str, upstream: int,
                                    accepted: bool) -> None:
    rules, causes = compile_crd_rules(schema)
    assert rules.estimated_costs[path] == upstream
    assert (causes == []) is accepted


def test_refusal_message_is_upstreams() -> None:
    schema = next(c[1] for c in CASES if c[0] == "100 unbounded strings matching a regex")
    _, causes = compile_crd_rules(schema)
    assert causes == [forbidden(f"{SPEC}.properties[hosts].x-kubernetes-validations[0].rule",
                                over_budget("estimated rule cost", "6.3x"))]

    schema = next(c[1] for c in CASES if c[0] == "unbounded list of unbounded strings matching a regex")
    _, causes = compile_crd_rules(schema)
    rule = f"{SPEC}.properties[hosts].x-kubernetes-validations[0].rule"
    assert causes == [
        forbidden(rule, over_budget("estimated rule cost", "more than 100x")),
        forbidden(rule, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
        forbidden(SCHEMA, over_budget("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                                      "more than 100x")),
    ]


def test_message_expression_cost_is_not_multiplied() -> None:
    # The rule runs 10 * 5 = 50 times; its messageExpression only when it fails, so its cost stands alone:
    # 'bad name: ' (10) + self (0..252) = size 10..262, ceil(262 * 0.1) = 27, plus self 1 = 28.
    # The rule: self.size() > 0 = 3, * 50 = 150.
    item = ruled(string(63), {"rule": "self.size() > 0", "messageExpression": "'bad name: ' + self"})
    schema = crd_schema(obj({"groups": array(obj({"members": array(item, 5)}), 10)}))
    rules, causes = compile_crd_rules(schema)
    base = f"{SPEC}.properties[groups].items.properties[members].items.x-kubernetes-validations[0]"
    assert causes == []
    assert rules.estimated_costs == {f"{base}.rule": 150, f"{base}.messageExpression": 28}


def test_unbounded_message_expression_is_refused() -> None:
    # string(int) has no size upstream, so 'count ' + string(self.count) may be 2^64 - 1 long:
    # ceil((2^64 - 1) * 0.1) in float64 = 1,844,674,407,370,955,264, plus string(self.count) = 1 + 2 = 3.
    spec = obj({"count": {"type": "integer"}})
    spec["x-kubernetes-validations"] = [{"rule": "self.count >= 0",
                                         "messageExpression": "'count ' + string(self.count)"}]
    rules, causes = compile_crd_rules(crd_schema(spec))
    path = f"{SPEC}.x-kubernetes-validations[0].messageExpression"
    assert rules.estimated_costs[path] == 1_844_674_407_370_955_267
    assert causes == [
        forbidden(path, over_budget("estimated messageExpression cost", "more than 100x")),
        forbidden(path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
        forbidden(SCHEMA, over_budget("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                                      "more than 100x")),
    ]


def test_per_crd_total_limit() -> None:
    # self.matches(RE) on an unbounded string: 629,146 + 1 = 629,147 per run. Lists of 15, 14, 13, 12 and ten of
    # 11 items: each rule stays under 10,000,000 (15 * 629,147 = 9,437,205), but together they run
    # 15 + 14 + 13 + 12 + 10 * 11 = 164 times: 103,180,108 = 1.0318x the 100,000,000 CRD budget.
    sizes = [15, 14, 13, 12] + [11] * 10
    props = {f"l{i}": array(ruled(string(), f"self.matches({RE})"), n) for i, n in enumerate(sizes)}
    rules, causes = compile_crd_rules(crd_schema(obj(props)))
    assert sum(rules.estimated_costs.values()) == 103_180_108
    contributed = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    # The four most expensive rules are named, then the total (1.0318010800: "%f" prints 6 decimals).
    assert causes == [forbidden(f"{SPEC}.properties[l{i}].items.x-kubernetes-validations[0].rule", contributed)
                      for i in range(4)] + [
        forbidden(SCHEMA, over_budget("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                                      "1.031801x"))]


def test_metadata_name_is_bounded() -> None:
    # The root exposes metadata.name with maxLength 253 (1,012 bytes): contains('x') =
    # ceil(1,012 * 0.1) = 102 * ceil(1 * 0.1) = 1, plus self.metadata.name 3 and 'x' 0 = 105.
    rules, causes = compile_crd_rules({**crd_schema(obj({})), "x-kubernetes-validations": [
        {"rule": "self.metadata.name.contains('x')"}]})
    assert causes == []
    assert rules.estimated_costs[f"{SCHEMA}.x-kubernetes-validations[0].rule"] == 105


# --- through the CRD strategy ---------------------------------------------------------------------


def crd_object(schema: dict[str, Any], name: str = "widgets") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": name, "singular": name[:-1], "kind": name[:-1].capitalize(),
                               "listKind": f"{name[:-1].capitalize()}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def crd_causes(schema: dict[str, Any]) -> list[Cause]:
    return CustomResourceDefinitionStrategy(BuiltinCRDStrategy()).validate(crd_object(schema))


def test_crd_creation_accepts_what_kube_accepts() -> None:
    assert crd_causes(gateway(f"self.all(k, k.matches({RE}))", "self.all(k, self[k].size() <= 4096)")) == []
    alertmanager = next(c[1] for c in CASES if c[0].endswith("(AlertmanagerConfig)"))
    assert crd_causes(alertmanager) == []


def test_crd_creation_refuses_what_kube_refuses() -> None:
    # One version's schema is reported under spec.validation, as upstream reports a shared schema.
    schema = next(c[1] for c in CASES if c[0] == "100 unbounded strings matching a regex")
    assert crd_causes(schema) == [forbidden(f"{SPEC}.properties[hosts].x-kubernetes-validations[0].rule",
                                            over_budget("estimated rule cost", "6.3x"))]


# --- real CRDs from the shared corpus -------------------------------------------------------------

_REAL_CRDS = ("gateways.gateway.networking.k8s.io", "alertmanagerconfigs.monitoring.coreos.com")


def _corpus_crds() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    if not CORPUS.is_dir():
        return found
    for path in sorted(CORPUS.rglob("*.y*ml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                name = (doc.get("metadata") or {}).get("name")
                if name in _REAL_CRDS:
                    found[name] = doc
    return found


@pytest.mark.parametrize("name", _REAL_CRDS)
def test_real_crd_from_corpus_is_accepted(name: str) -> None:
    crd = _corpus_crds().get(name)
    if crd is None:
        pytest.skip(f"no {name} CustomResourceDefinition under {CORPUS}")
    for version in crd["spec"]["versions"]:
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            assert compile_crd_rules(schema)[1] == [], version["name"]
