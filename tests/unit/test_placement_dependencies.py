"""``dependencies: Follow``: the reference graph (placement/dependencies.py) and the placement engine sending what
the selected workloads reference, taking it back when nothing selected references it, and explaining why."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from placement.dependencies import EXPOSED_BY, Because, DependencyGraph
from placement.downsync import DEPENDENCY
from placement.engine import PlacementEngine
from placement.kinds import placement_types
from placement.model import ObjectRef, WorkloadObject
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
from tests.placement_world import load_inventory, placement, refs

SPACE = "wmw"
DEPLOYMENTS = "deployments.apps"


def workload(resource: str, name: str, content: dict[str, Any] | None = None, namespace: str = "app") -> WorkloadObject:
    """The engine's summary of an object, read from its content by placement/references.py as the hub does."""
    content = content or {}
    return WorkloadObject(ObjectRef(SPACE, resource, namespace, name), "", "v1",
                          tuple(sorted(((content.get("metadata") or {}).get("labels") or {}).items())), 1, True,
                          references=references(resource, content), pod_labels=pod_labels(resource, content),
                          pod_selector=service_selector(resource, content))


def deployment(name: str, config: str | None = "web-conf", app: str = "web") -> WorkloadObject:
    volumes = [{"name": "conf", "configMap": {"name": config}}] if config else []
    return workload(DEPLOYMENTS, name, {"spec": {"template": {
        "metadata": {"labels": {"app": app}},
        "spec": {"serviceAccountName": "web-sa", "volumes": [
            *volumes, {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "web-secret"}}]}]}}}})


def service(name: str = "web", app: str = "web") -> WorkloadObject:
    return workload("services", name, {"spec": {"selector": {"app": app}}})


def ref(resource: str, name: str, namespace: str = "app") -> ObjectRef:
    return ObjectRef(SPACE, resource, namespace, name)


def looping(this: ObjectRef, other: ObjectRef) -> WorkloadObject:
    """An object referencing another of its kind (no Kubernetes kind loops, but the graph must not care)."""
    return WorkloadObject(this, "", "v1", (), 1, True, references=(Reference(other.resource, other.name, MOUNTS),))


WEB = ref(DEPLOYMENTS, "web")
CONF, SECRET, SA, PVC, SVC = (ref("configmaps", "web-conf"), ref("secrets", "web-secret"),
                              ref("serviceaccounts", "web-sa"), ref("persistentvolumeclaims", "web-data"),
                              ref("services", "web"))
DEPENDENCIES = {CONF, SECRET, SA, PVC, SVC}


# ----------------------------------------------------------------------------------------------
# The graph


def test_the_graph_links_referrers_to_what_they_reference_and_workloads_to_the_services_exposing_them() -> None:
    graph = DependencyGraph()
    assert graph.set_object(deployment("web"))
    assert graph.set_object(service())
    assert not graph.set_object(service("other", app="other"))  # selects other pods: no edge
    assert not graph.set_object(deployment("web"))  # the same again
    assert graph.edges(SPACE) == {(WEB, CONF, frozenset({MOUNTS})), (WEB, SECRET, frozenset({ENV})),
                                  (WEB, SA, frozenset({RUNS_AS})), (WEB, PVC, frozenset({CLAIMS_IT})),
                                  (WEB, SVC, frozenset({EXPOSED_BY}))}
    # The Service's selector changes: the edge follows it either way.
    graph.set_object(service(app="else"))
    assert (WEB, SVC, frozenset({EXPOSED_BY})) not in graph.edges(SPACE)
    graph.set_object(service())
    assert (WEB, SVC, frozenset({EXPOSED_BY})) in graph.edges(SPACE)


def test_reachable_needs_existing_objects_and_goes_through_them() -> None:
    graph = DependencyGraph()
    graph.set_object(deployment("web"))
    registry = ref("secrets", "registry")
    existing = {WEB, CONF, registry}
    # The ServiceAccount does not exist yet: it is not reached, nor is what it will reference.
    assert graph.reachable(SPACE, {WEB}, existing.__contains__) == {CONF: [Because(WEB, (MOUNTS,))]}
    graph.set_object(workload("serviceaccounts", "web-sa", {"imagePullSecrets": [{"name": "registry"}]}))
    existing.add(SA)
    reached = graph.reachable(SPACE, {WEB}, existing.__contains__)
    assert reached == {CONF: [Because(WEB, (MOUNTS,))], SA: [Because(WEB, (RUNS_AS,))],
                       registry: [Because(SA, (PULLS,))]}
    assert str(reached[registry][0]) == "sent because serviceaccounts app/web-sa pulls images with it"


def test_a_secret_used_two_ways_by_two_workloads_says_so() -> None:
    graph = DependencyGraph()
    both = workload("pods", "p", {"spec": {"volumes": [{"name": "s", "secret": {"secretName": "s"}}],
                                           "imagePullSecrets": [{"name": "s"}]}})
    graph.set_object(both)
    graph.set_object(workload("pods", "q", {"spec": {"imagePullSecrets": [{"name": "s"}]}}))
    secret = ref("secrets", "s")
    why = graph.reachable(SPACE, {both.ref, ref("pods", "q")}, lambda r: True)[secret]
    assert [str(b) for b in why] == ["sent because pods app/p mounts and pulls images with it",
                                     "sent because pods app/q pulls images with it"]


def test_cycles_are_reported_and_do_not_stop_reachability() -> None:
    graph = DependencyGraph()
    a, b = ref("serviceaccounts", "a"), ref("serviceaccounts", "b")
    graph.set_object(looping(a, b))
    graph.set_object(looping(b, a))
    assert set(graph.reachable(SPACE, {a}, lambda r: True)) == {a, b}
    followed, problems = graph.explain(SPACE, {a}, lambda r: True)
    assert problems == ["reference cycle: serviceaccounts app/a → serviceaccounts app/b → serviceaccounts app/a"]
    assert followed[a] == ["sent because serviceaccounts app/b mounts it"]


def test_nodes_go_when_nothing_references_them() -> None:
    graph = DependencyGraph()
    graph.set_object(deployment("web"))
    graph.set_object(service())
    graph.set_object(deployment("web", config=None))
    assert CONF not in {v for _, v, _ in graph.edges(SPACE)}
    graph.remove_object(WEB)
    assert graph.edges(SPACE) == set()
    graph.remove_object(SVC)
    assert graph.reachable(SPACE, {WEB}, lambda r: True) == {}
    assert not graph._graphs and not graph._selectors and not graph._pod_labels and not graph._references


# ----------------------------------------------------------------------------------------------
# The engine


def engine_with(follow: str | None = "Follow") -> PlacementEngine:
    engine = PlacementEngine()
    load_inventory(engine)
    spec = placement("web", [{"matchLabels": {"env": "prod"}}],
                     [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}])
    if follow is not None:
        spec["spec"]["dependencies"] = follow
    engine.upsert_placement(SPACE, spec)
    for obj in (workload("configmaps", "web-conf"), workload("secrets", "web-secret"),
                workload("serviceaccounts", "web-sa"), workload("persistentvolumeclaims", "web-data"), service(),
                workload("configmaps", "unrelated")):
        engine.upsert_object(obj)
    return engine


def placed(engine: PlacementEngine) -> set[ObjectRef]:
    return {r for r in refs(engine, "florin") if r.resource != "namespaces"}


def test_follow_sends_what_the_deployment_references_and_says_why() -> None:
    engine = engine_with()
    engine.upsert_object(deployment("web"))
    assert placed(engine) == {WEB, *DEPENDENCIES}
    assert engine.selected_objects(SPACE, "web")[CONF] == [DEPENDENCY]
    assert engine.followed(SPACE, "web")[CONF] == ["sent because deployments.apps app/web mounts it"]
    assert engine.followed(SPACE, "web")[SVC] == ["sent because deployments.apps app/web is exposed by it"]
    # A placement's status and the syncers hear of the selection change.
    assert ("wmw", "web") in engine.drain_dirty()[0]
    # A followed object that changes, or an object nothing references, changes nothing of what is followed.
    engine.upsert_object(dataclasses.replace(workload("configmaps", "web-conf"), revision=2))
    engine.upsert_object(workload("configmaps", "unrelated", {"metadata": {"labels": {"x": "y"}}}))
    assert placed(engine) == {WEB, *DEPENDENCIES}
    assert engine.selected_objects(SPACE, "web")[CONF] == [DEPENDENCY]


def test_without_follow_only_the_deployment_goes() -> None:
    for follow in (None, "None"):
        engine = engine_with(follow)
        engine.upsert_object(deployment("web"))
        assert placed(engine) == {WEB}
        assert engine.followed(SPACE, "web") == {}


def test_editing_the_reference_away_takes_the_object_back() -> None:
    engine = engine_with()
    engine.upsert_object(deployment("web"))
    engine.upsert_object(deployment("web", config="other-conf"))  # a ConfigMap not created yet
    assert placed(engine) == {WEB, *DEPENDENCIES} - {CONF}
    # It follows as soon as it appears, and leaves again when deleted.
    other = ref("configmaps", "other-conf")
    engine.upsert_object(workload("configmaps", "other-conf"))
    assert other in placed(engine)
    engine.delete_object(other)
    assert other not in placed(engine)
    # The Deployment's pods change labels: the Service no longer exposes it.
    engine.upsert_object(deployment("web", app="renamed"))
    assert SVC not in placed(engine)


def test_a_shared_config_map_stays_while_any_user_remains() -> None:
    engine = engine_with()
    engine.upsert_object(deployment("web"))
    engine.upsert_object(deployment("api", app="api"))
    engine.upsert_object(deployment("web", config=None))
    assert CONF in placed(engine)
    assert engine.followed(SPACE, "web")[CONF] == ["sent because deployments.apps app/api mounts it"]
    engine.delete_object(ref(DEPLOYMENTS, "api"))
    assert CONF not in placed(engine) and SECRET in placed(engine)
    engine.delete_object(WEB)
    assert placed(engine) == set()


def test_a_dependency_the_tests_also_select_keeps_its_test_when_no_longer_referenced() -> None:
    engine = engine_with()
    spec = placement("web", [{"matchLabels": {"env": "prod"}}],
                     [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]},
                      {"apiGroup": "", "resources": ["configmaps"], "objectNames": ["web-conf"]}])
    spec["spec"]["dependencies"] = "Follow"
    engine.upsert_placement(SPACE, spec)
    engine.upsert_object(deployment("web"))
    assert engine.selected_objects(SPACE, "web")[CONF] == [1, DEPENDENCY]
    engine.upsert_object(deployment("web", config=None))
    assert engine.selected_objects(SPACE, "web")[CONF] == [1]
    assert CONF in placed(engine)


def test_turning_follow_off_and_on_again() -> None:
    engine = engine_with()
    engine.upsert_object(deployment("web"))
    spec = placement("web", [{"matchLabels": {"env": "prod"}}],
                     [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}])
    engine.upsert_placement(SPACE, spec)
    assert placed(engine) == {WEB} and engine.followed(SPACE, "web") == {}
    spec["spec"]["dependencies"] = "Follow"
    engine.upsert_placement(SPACE, spec)
    assert placed(engine) == {WEB, *DEPENDENCIES}
    engine.delete_placement(SPACE, "web")
    assert placed(engine) == set()


def test_a_reference_cycle_does_not_keep_itself_placed() -> None:
    engine = engine_with()
    a, b = ref("serviceaccounts", "a"), ref("serviceaccounts", "b")
    engine.upsert_object(looping(a, b))
    engine.upsert_object(looping(b, a))
    engine.upsert_object(workload("pods", "p", {"spec": {"serviceAccountName": "a"}}))
    spec = placement("pods", [{"matchLabels": {"env": "prod"}}], [{"resources": ["pods"], "namespaces": ["app"]}])
    spec["spec"]["dependencies"] = "Follow"
    engine.upsert_placement(SPACE, spec)
    assert set(engine.followed(SPACE, "pods")) == {a, b}
    engine.upsert_object(workload("pods", "p", {"spec": {}}))
    assert engine.followed(SPACE, "pods") == {} and not {a, b} & placed(engine)


def test_explain_selects_the_dependencies_with_why() -> None:
    engine = engine_with(None)
    engine.upsert_object(deployment("web"))
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}], "dependencies": "Follow",
            "downsync": [{"apiGroup": "apps", "resources": ["deployments"], "objectNames": ["web"]}]}
    result = engine.explain(SPACE, spec)
    assert set(result.objects) == {WEB, *DEPENDENCIES}
    assert result.objects[PVC] == [DEPENDENCY]
    assert result.because[PVC] == ["sent because deployments.apps app/web claims it"]
    assert "configmaps app/unrelated" in {m.name for m in result.object_mismatches}
    assert "configmaps app/web-conf" not in {m.name for m in result.object_mismatches}
    assert set(engine.explain(SPACE, {**spec, "dependencies": "None"}).objects) == {WEB}


@pytest.mark.parametrize("value", ["follow", "Always", True])
def test_dependencies_other_than_follow_or_none_are_invalid(value: Any) -> None:
    strategy = next(t.strategy for t in placement_types() if t.kind == "EdgePlacement")
    obj = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": "p"},
           "spec": {"dependencies": value}}
    assert {c.field for c in strategy.validate(obj)} == {"spec.dependencies"}
    assert strategy.validate({**obj, "spec": {"dependencies": "Follow"}}) == []
