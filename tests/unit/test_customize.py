"""KubeStellar's customization rules: parameter expansion and Customizer replacements, one cluster's copy."""

from __future__ import annotations

from typing import Any

import pytest

from placement.customize import CUSTOMIZER_ANNOTATION, EXPAND_ANNOTATION, CustomizeError, customize, customizer_ref

FLORIN = [{"env": "prod", "loc-name": "florin"}, {"note": "from an annotation", "env": "annotation loses"}]


def configmap(text: str, **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "httpd-htdocs", "namespace": "commonstuff", "annotations": annotations},
            "data": {"index.html": text}}


def deployment(**annotations: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "commond", "namespace": "commonstuff", "annotations": annotations},
            "spec": {"template": {"spec": {"containers": [
                {"name": "httpd", "image": "library/httpd:2.4", "env": [{"name": "EXAMPLE_VAR", "value": "x"}]}]}}}}


def customizer(*replacements: tuple[str, str], expand: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "example-customizer", "namespace": "commonstuff"}
    if expand:
        meta["annotations"] = {EXPAND_ANNOTATION: "true"}
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Customizer", "metadata": meta,
            "replacements": [{"path": p, "value": v} for p, v in replacements]}


def test_expansion_reads_location_labels_then_annotations_and_leaves_unknown_keys() -> None:
    obj = configmap("Running in %(loc-name), %(note); env %(env); 100%% sure; %(nope)", **{EXPAND_ANNOTATION: "true"})
    out = customize(obj, None, FLORIN)
    assert out.obj["data"]["index.html"] == "Running in florin, from an annotation; env prod; 100% sure; %(nope)"
    assert out.unknown_keys == {"nope"}
    assert obj["data"]["index.html"].startswith("Running in %(loc-name)")  # the space's object is untouched


def test_without_the_annotation_nothing_is_expanded() -> None:
    obj = configmap("Running in %(loc-name)")
    assert customize(obj, None, FLORIN).obj == obj


def test_example1_customizer_sets_the_env_value_with_upstream_dot_index_paths() -> None:
    cz = customizer(("$.spec.template.spec.containers.0.env.0.value", '"env is %(env)"'), expand=True)
    out = customize(deployment(**{CUSTOMIZER_ANNOTATION: "example-customizer"}), cz, FLORIN)
    assert out.obj["spec"]["template"]["spec"]["containers"][0]["env"][0] == {"name": "EXAMPLE_VAR",
                                                                              "value": "env is prod"}


def test_customizer_values_are_json_and_paths_may_select_many_or_create_one_member() -> None:
    cz = customizer(("$.spec.template.spec.containers[*].image", '"registry.local/httpd:2.4"'),
                    ("$.spec.replicas", "3"), ("$.metadata.labels", '{"tier": "web"}'))
    out = customize(deployment(), cz, FLORIN).obj
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/httpd:2.4"
    assert out["spec"]["replicas"] == 3
    assert out["metadata"]["labels"] == {"tier": "web"}


def test_without_expand_on_the_customizer_its_text_is_literal() -> None:
    cz = customizer(("$.data['index.html']", '"%(loc-name)"'))
    assert customize(configmap("x"), cz, FLORIN).obj["data"]["index.html"] == "%(loc-name)"


@pytest.mark.parametrize(("path", "value", "message"), [
    ("$.spec.template[", '"x"', "is not a valid JSONPath"),
    ("spec.replicas", "1", "must start with $"),
    ("$.spec.missing.deeper", "1", "selects nothing in the object"),
    ("$.spec.replicas", "not json", "replacements[0].value: 'not json' is not JSON text"),
    ("$.metadata.name", '"other"', "metadata.name would change"),
])
def test_a_customizer_that_cannot_apply_says_where_and_why(path: str, value: str, message: str) -> None:
    with pytest.raises(CustomizeError, match=message.replace("[", r"\[").replace("$", r"\$")):
        customize(deployment(), customizer((path, value)), FLORIN)


def test_the_annotation_names_a_customizer_in_the_objects_namespace_or_as_namespace_slash_name() -> None:
    assert customizer_ref(deployment(**{CUSTOMIZER_ANNOTATION: "c1"})) == ("commonstuff", "c1")
    assert customizer_ref(deployment(**{CUSTOMIZER_ANNOTATION: "other/c2"})) == ("other", "c2")
    cluster_scoped = {"metadata": {"name": "crontabs.stable.example.com", "annotations": {CUSTOMIZER_ANNOTATION: "c"}}}
    with pytest.raises(CustomizeError, match="namespace/name"):
        customizer_ref(cluster_scoped)
