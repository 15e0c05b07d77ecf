"""Placement engine: where and what resolution, desired sets, deletion paths, change logs and explain.

The scenario is KubeStellar's PoC2023q1/q4 example1: Locations florin (env=prod) and guilder
(env=prod, extended=yes); workload space wmw-c with edge-placement-c and wmw-s with edge-placement-s.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from inventory.kinds import EDGE_GROUP
from placement.engine import PlacementEngine
from placement.model import DesiredEntry, Destination, ObjectRef, WorkloadObject
from placement.ordering import apply_order, deletion_order
from placement.selection import FOLLOWED

CRD = "customresourcedefinitions.apiextensions.k8s.io"


# ----------------------------------------------------------------------------------------------
# Builders


def location(name: str, labels: dict[str, str], selector: dict[str, Any] | None = None,
             resource: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location",
        "metadata": {"name": name, "labels": labels},
        "spec": {"resource": resource or {"group": EDGE_GROUP, "version": "v2alpha1", "resource": "synctargets"},
                 "instanceSelector": selector if selector is not None else {"matchLabels": {"id": name}}},
    }


def sync_target(name: str, labels: dict[str, str] | None = None, uid: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
            "metadata": {"name": name, "uid": uid or f"uid-{name}", "labels": {"id": name, **(labels or {})}}}


def placement(name: str, location_selectors: list[dict[str, Any]], downsync: list[dict[str, Any]],
              singleton: bool = False) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": location_selectors, "downsync": downsync,
                     "wantSingletonReportedState": singleton}}


KINDS = {
    "namespaces": ("Namespace", "v1"), "configmaps": ("ConfigMap", "v1"),
    "replicasets.apps": ("ReplicaSet", "apps/v1"), "deployments.apps": ("Deployment", "apps/v1"),
    "customizers.edge.kubestellar.io": ("Customizer", "edge.kubestellar.io/v2alpha1"),
    CRD: ("CustomResourceDefinition", "apiextensions.k8s.io/v1"),
    "crontabs.stable.example.com": ("CronTab", "stable.example.com/v1"),
    "apiservices.apiregistration.k8s.io": ("APIService", "apiregistration.k8s.io/v1"),
}


def ref(space: str, resource: str, namespace: str, name: str) -> ObjectRef:
    return ObjectRef(space, resource, namespace, name)


def wobj(space: str, resource: str, namespace: str, name: str, labels: dict[str, str] | None = None,
         revision: int = 1) -> WorkloadObject:
    kind, api_version = KINDS[resource]
    defines = None
    if resource == CRD:
        plural, _, group = name.partition(".")
        defines = (group, plural)
    return WorkloadObject(ref(space, resource, namespace, name), kind, api_version,
                          tuple(sorted((labels or {}).items())), revision, bool(namespace), defines)


def ns_ref(space: str, name: str) -> ObjectRef:
    return ref(space, "namespaces", "", name)


def view(entries: list[DesiredEntry]) -> list[tuple[str, str, str, str, str, bool]]:
    """Entries as (space, resource, namespace, name, kind, implicit), in the engine's order."""
    return [(e.ref.space, e.ref.resource, e.ref.namespace, e.ref.name, e.kind, e.implicit) for e in entries]


def refs(engine: PlacementEngine, target: str) -> set[ObjectRef]:
    return {e.ref for e in engine.desired(target)}


EXAMPLE_C = placement("edge-placement-c", [{"matchLabels": {"env": "prod"}}], [
    {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"], "objectNames": ["httpd-htdocs"]},
    {"apiGroup": "apps", "resources": ["replicasets"], "namespaces": ["commonstuff"]},
], singleton=True)

EXAMPLE_S = placement("edge-placement-s", [{"matchLabels": {"env": "prod", "extended": "yes"}}], [
    {"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]},
    {"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"],
     "objectNames": ["crontabs.stable.example.com"]},
    {"apiGroup": "apiregistration.k8s.io", "resources": ["apiservices"], "objectNames": ["v1090.example.my"]},
    {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["specialstuff"]},
], singleton=True)


def load_inventory(engine: PlacementEngine) -> None:
    engine.upsert_location(location("florin", {"loc-name": "florin", "env": "prod"}))
    engine.upsert_location(location("guilder", {"loc-name": "guilder", "env": "prod", "extended": "yes"}))
    engine.upsert_sync_target(sync_target("florin", {"loc-name": "florin", "env": "prod"}))
    engine.upsert_sync_target(sync_target("guilder", {"loc-name": "guilder", "env": "prod", "extended": "yes"}))


def load_common(engine: PlacementEngine) -> None:
    for obj in (wobj("wmw-c", "namespaces", "", "commonstuff"),
                wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"),
                wobj("wmw-c", "customizers.edge.kubestellar.io", "commonstuff", "example-customizer"),
                wobj("wmw-c", "replicasets.apps", "commonstuff", "commond")):
        engine.upsert_object(obj)
    engine.upsert_placement("wmw-c", EXAMPLE_C)


def load_special(engine: PlacementEngine, spec: dict[str, Any] = EXAMPLE_S) -> None:
    for obj in (wobj("wmw-s", CRD, "", "crontabs.stable.example.com"),
                wobj("wmw-s", "namespaces", "", "specialstuff", {"special": "yes"}),
                wobj("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object"),
                wobj("wmw-s", "configmaps", "specialstuff", "httpd-htdocs"),
                wobj("wmw-s", "customizers.edge.kubestellar.io", "specialstuff", "example-customizer"),
                wobj("wmw-s", "deployments.apps", "specialstuff", "speciald"),
                wobj("wmw-s", "apiservices.apiregistration.k8s.io", "", "v1090.example.my")):
        engine.upsert_object(obj)
    engine.upsert_placement("wmw-s", spec)


@pytest.fixture
def example1() -> PlacementEngine:
    engine = PlacementEngine()
    load_inventory(engine)
    load_common(engine)
    load_special(engine)
    engine.drain_dirty()
    return engine


FLORIN = [
    ("wmw-c", "namespaces", "", "commonstuff", "namespace", True),
    ("wmw-c", "configmaps", "commonstuff", "httpd-htdocs", "object", False),
    ("wmw-c", "replicasets.apps", "commonstuff", "commond", "object", False),
]
GUILDER = [
    ("wmw-c", "namespaces", "", "commonstuff", "namespace", True),
    ("wmw-s", "namespaces", "", "specialstuff", "namespace", False),
    ("wmw-s", CRD, "", "crontabs.stable.example.com", "crd", False),
    ("wmw-c", "configmaps", "commonstuff", "httpd-htdocs", "object", False),
    ("wmw-c", "replicasets.apps", "commonstuff", "commond", "object", False),
    ("wmw-s", "apiservices.apiregistration.k8s.io", "", "v1090.example.my", "object", False),
    ("wmw-s", "configmaps", "specialstuff", "httpd-htdocs", "object", False),
    ("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object", "object", False),
    ("wmw-s", "customizers.edge.kubestellar.io", "specialstuff", "example-customizer", "object", False),
    ("wmw-s", "deployments.apps", "specialstuff", "speciald", "object", False),
]


# ----------------------------------------------------------------------------------------------
# example1


def test_example1_destinations(example1: PlacementEngine) -> None:
    assert example1.destinations("wmw-c", "edge-placement-c") == [
        Destination("florin", "florin", "uid-florin"), Destination("guilder", "guilder", "uid-guilder")]
    assert example1.destinations("wmw-s", "edge-placement-s") == [Destination("guilder", "guilder", "uid-guilder")]
    assert example1.matching_location_count("wmw-c", "edge-placement-c") == 2
    assert example1.matching_location_count("wmw-s", "edge-placement-s") == 1
    assert example1.destinations("wmw-s", "nope") == []


def test_example1_desired_sets_in_order(example1: PlacementEngine) -> None:
    assert view(example1.desired("florin")) == FLORIN
    assert view(example1.desired("guilder")) == GUILDER
    specialstuff = next(e for e in example1.desired("guilder") if e.ref == ns_ref("wmw-s", "specialstuff"))
    assert specialstuff.placements == (("wmw-s", "edge-placement-s"),)
    commonstuff = next(e for e in example1.desired("florin") if e.ref == ns_ref("wmw-c", "commonstuff"))
    assert commonstuff.placements == (("wmw-c", "edge-placement-c"),)


def test_example1_selection_and_status_inputs(example1: PlacementEngine) -> None:
    assert example1.selected_objects("wmw-c", "edge-placement-c") == {
        ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"): [0],
        ref("wmw-c", "replicasets.apps", "commonstuff", "commond"): [1],
    }
    selected_s = example1.selected_objects("wmw-s", "edge-placement-s")
    assert selected_s[ref("wmw-s", CRD, "", "crontabs.stable.example.com")] == [1]
    assert selected_s[ns_ref("wmw-s", "specialstuff")] == [3]
    assert selected_s[ref("wmw-s", "deployments.apps", "specialstuff", "speciald")] == [0]
    assert example1.missing_crds("wmw-s", "edge-placement-s") == []
    commond = ref("wmw-c", "replicasets.apps", "commonstuff", "commond")
    speciald = ref("wmw-s", "deployments.apps", "specialstuff", "speciald")
    assert example1.object_destinations(commond) == ["florin", "guilder"]
    assert example1.object_destinations(speciald) == ["guilder"]
    assert example1.object_destinations(ns_ref("wmw-c", "commonstuff")) == ["florin", "guilder"]
    assert example1.object_destinations(ref("wmw-c", "customizers.edge.kubestellar.io", "commonstuff",
                                            "example-customizer")) == []
    assert example1.wants_singleton_status(speciald)
    assert example1.wants_singleton_status(commond)  # flag asked, but 2 destinations: the glue decides


def test_example1_is_independent_of_input_order() -> None:
    steps = [lambda e: load_special(e), lambda e: load_common(e), lambda e: load_inventory(e)]
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        engine = PlacementEngine()
        for i in order:
            steps[i](engine)
        assert view(engine.desired("florin")) == FLORIN
        assert view(engine.desired("guilder")) == GUILDER


def test_custom_resource_without_selected_crd_is_reported_not_placed() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    spec = placement("edge-placement-s", [{"matchLabels": {"env": "prod", "extended": "yes"}}],
                     [{"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]}])
    load_special(engine, spec)
    assert engine.missing_crds("wmw-s", "edge-placement-s") == ["crontabs.stable.example.com"]
    guilder = refs(engine, "guilder")
    assert ref("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object") in guilder
    assert ref("wmw-s", CRD, "", "crontabs.stable.example.com") not in guilder
    # Selecting the CRD fixes it and places the CRD before its custom resources.
    engine.drain_dirty()
    engine.upsert_placement("wmw-s", EXAMPLE_S)
    assert engine.missing_crds("wmw-s", "edge-placement-s") == []
    assert view(engine.desired("guilder")) == [e for e in GUILDER if e[0] == "wmw-s"]
    # Deleting the CRD object: the custom resource is no longer known as one.
    engine.upsert_placement("wmw-s", spec)
    assert engine.missing_crds("wmw-s", "edge-placement-s") == ["crontabs.stable.example.com"]
    engine.drain_dirty()
    engine.delete_object(ref("wmw-s", CRD, "", "crontabs.stable.example.com"))
    assert engine.missing_crds("wmw-s", "edge-placement-s") == []
    assert engine.drain_dirty()[0] == {("wmw-s", "edge-placement-s")}


def test_crd_follow_sends_the_crd_with_its_custom_resources_and_takes_it_back_after_the_last() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    spec = placement("edge-placement-s", [{"matchLabels": {"env": "prod", "extended": "yes"}}],
                     [{"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]}])
    spec["spec"]["crdFollow"] = True
    load_special(engine, spec)
    crd = ref("wmw-s", CRD, "", "crontabs.stable.example.com")
    cron = ref("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object")
    assert engine.missing_crds("wmw-s", "edge-placement-s") == []
    assert engine.selected_objects("wmw-s", "edge-placement-s")[crd] == [FOLLOWED]
    entries = view(engine.desired("guilder"))
    crd_at = entries.index(("wmw-s", CRD, "", crd.name, "crd", False))
    assert crd_at < entries.index(("wmw-s", cron.resource, "specialstuff", cron.name, "object", False))

    # A second custom resource, then the first removed: the CRD stays while one remains.
    second = wobj("wmw-s", "crontabs.stable.example.com", "specialstuff", "second")
    engine.upsert_object(second)
    seq = engine.current_seq("guilder")
    engine.delete_object(cron)
    assert crd in refs(engine, "guilder")
    # The last one removed: the CRD leaves in the same change, after its custom resource.
    engine.delete_object(second.ref)
    changes = engine.changes_since("guilder", seq) or []
    assert [(c.op, c.entry.ref) for c in changes] == [("delete", cron), ("delete", second.ref), ("delete", crd)]
    assert crd not in engine.selected_objects("wmw-s", "edge-placement-s")

    # Back again: a custom resource brings the CRD, logged before it.
    seq = engine.current_seq("guilder")
    engine.upsert_object(wobj("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object"))
    changes = engine.changes_since("guilder", seq) or []
    assert [(c.op, c.entry.ref) for c in changes] == [("upsert", crd), ("upsert", cron)]

    # Turning crdFollow off reports the CRD missing and takes it from the clusters.
    spec["spec"]["crdFollow"] = False
    engine.upsert_placement("wmw-s", spec)
    assert engine.missing_crds("wmw-s", "edge-placement-s") == ["crontabs.stable.example.com"]
    assert crd not in refs(engine, "guilder") and cron in refs(engine, "guilder")


def test_crd_follow_keeps_a_crd_the_tests_select_themselves() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    spec = {**EXAMPLE_S, "spec": {**EXAMPLE_S["spec"], "crdFollow": True}}
    load_special(engine, spec)
    crd = ref("wmw-s", CRD, "", "crontabs.stable.example.com")
    assert engine.selected_objects("wmw-s", "edge-placement-s")[crd] == [1, FOLLOWED]
    engine.delete_object(ref("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object"))
    assert engine.selected_objects("wmw-s", "edge-placement-s")[crd] == [1]
    assert crd in refs(engine, "guilder")


def test_downsync_tests_naming_unserved_resources_are_reported() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    spec = placement("p", [{"matchLabels": {"env": "prod"}}], [
        {"apiGroup": "apiregistration.k8s.io", "resources": ["apiservices"]},  # served everywhere
        {"apiGroup": "stable.example.com", "resources": ["crontabs"]},  # until its CRD exists
        {"apiGroup": "", "resources": ["pods", "configmaps"]},  # clusters run pods; spaces hold none
        {"resources": ["widgets"]},  # no group serves it
        {"apiGroup": "nothing.example.com"},  # a group nothing serves
    ])
    engine.upsert_placement("wmw-s", spec)
    assert engine.unserved_resources("wmw-s", "p") == [
        "crontabs.stable.example.com", "nothing.example.com", "pods", "widgets"]
    engine.drain_dirty()
    engine.upsert_object(wobj("wmw-s", CRD, "", "crontabs.stable.example.com"))
    assert ("wmw-s", "p") in engine.drain_dirty()[0]
    assert engine.unserved_resources("wmw-s", "p") == ["nothing.example.com", "pods", "widgets"]
    # The CRD of another space does not serve this one.
    assert engine.unserved_resources("wmw-c", "p") == []  # no such placement there
    engine.upsert_placement("wmw-c", spec)
    assert "crontabs.stable.example.com" in engine.unserved_resources("wmw-c", "p")
    assert engine.explain("wmw-c", spec).unserved_resources == engine.unserved_resources("wmw-c", "p")


# ----------------------------------------------------------------------------------------------
# Ordering


def test_ordering_namespace_then_crd_then_custom_resources_and_reverse_for_deletion(
        example1: PlacementEngine) -> None:
    entries = example1.desired("guilder")
    shuffled = list(entries)
    random.Random(7).shuffle(shuffled)
    assert apply_order(shuffled) == entries
    kinds = [e.kind for e in entries]
    assert kinds == sorted(kinds, key=["namespace", "crd", "object"].index)
    position = {e.ref: i for i, e in enumerate(entries)}
    cron = ref("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object")
    assert position[ns_ref("wmw-s", "specialstuff")] < position[ref("wmw-s", CRD, "", "crontabs.stable.example.com")]
    assert position[ref("wmw-s", CRD, "", "crontabs.stable.example.com")] < position[cron]
    assert deletion_order(shuffled) == list(reversed(entries))
    assert deletion_order(shuffled)[-1].kind == "namespace"


def test_ordering_dependencies_cross_spaces() -> None:
    # A Namespace entry of one space precedes another space's objects in that namespace (same cluster name),
    # and a CRD precedes cluster-scoped custom resources too.
    entries = [
        DesiredEntry(ref("b", "widgets.example.org", "", "w1"), "object"),
        DesiredEntry(ref("a", "configmaps", "shared", "x"), "object"),
        DesiredEntry(ref("b", "namespaces", "", "shared"), "namespace", implicit=True),
        DesiredEntry(ref("z", CRD, "", "widgets.example.org"), "crd"),
    ]
    ordered = [e.ref.name for e in apply_order(entries)]
    assert ordered == ["shared", "widgets.example.org", "x", "w1"]


# ----------------------------------------------------------------------------------------------
# Deletion semantics: every path removes an object from exactly the targets that no longer need it.

CM = ref("ws", "configmaps", "app", "cm")
OTHER = ref("ws", "configmaps", "app", "other")
APP_NS = ns_ref("ws", "app")


def overlap_engine() -> PlacementEngine:
    """Three clusters; `wide` (env=prod) reaches florin+guilder, `narrow` (extended=yes) guilder+ducat.

    Both select ConfigMap app/cm (labelled app=web); `wide` also selects app/other.
    """
    engine = PlacementEngine()
    load_inventory(engine)
    engine.upsert_location(location("ducat", {"env": "dev", "extended": "yes"}))
    engine.upsert_sync_target(sync_target("ducat", {"env": "dev"}))
    engine.upsert_object(wobj("ws", "namespaces", "", "app", {"team": "a"}))
    engine.upsert_object(wobj("ws", "configmaps", "app", "cm", {"app": "web"}))
    engine.upsert_object(wobj("ws", "configmaps", "app", "other", {"app": "web", "wide": "only"}))
    engine.upsert_placement("ws", placement("wide", [{"matchLabels": {"env": "prod"}}], [
        {"resources": ["configmaps"], "namespaceSelectors": [{"matchLabels": {"team": "a"}}],
         "labelSelectors": [{"matchLabels": {"app": "web"}}]}]))
    engine.upsert_placement("ws", placement("narrow", [{"matchLabels": {"extended": "yes"}}], [
        {"resources": ["configmaps"], "objectNames": ["cm"]}]))
    for t in ("florin", "guilder", "ducat"):
        engine.current_seq(t)  # first contact: these targets keep change logs from now on
    engine.drain_dirty()
    return engine


TARGETS = ("florin", "guilder", "ducat")


def snapshot(engine: PlacementEngine) -> dict[str, set[ObjectRef]]:
    return {t: refs(engine, t) for t in TARGETS}


def affected(before: dict[str, set[ObjectRef]], after: dict[str, set[ObjectRef]]) -> dict[str, set[ObjectRef]]:
    """Per target, what it lost."""
    return {t: before[t] - after[t] for t in TARGETS if before[t] - after[t]}


def logged(engine: PlacementEngine, seqs: dict[str, int]) -> dict[str, list[tuple[str, ObjectRef]]]:
    out = {}
    for t in TARGETS:
        changes = engine.changes_since(t, seqs[t])
        assert changes is not None
        if changes:
            out[t] = [(c.op, c.entry.ref) for c in changes]
    return out


def run_path(engine: PlacementEngine, action: Any) -> tuple[dict[str, set[ObjectRef]], dict[str, Any], set[str]]:
    before = snapshot(engine)
    seqs = {t: engine.current_seq(t) for t in TARGETS}
    action(engine)
    after = snapshot(engine)
    _, dirty = engine.drain_dirty()
    return affected(before, after), logged(engine, seqs), dirty


def test_overlap_baseline() -> None:
    engine = overlap_engine()
    assert snapshot(engine) == {"florin": {APP_NS, CM, OTHER}, "guilder": {APP_NS, CM, OTHER}, "ducat": {APP_NS, CM}}
    assert all(e.implicit for e in engine.desired("ducat") if e.kind == "namespace")


def test_delete_object_removes_it_everywhere_and_the_implicit_namespace_only_where_unneeded() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.delete_object(CM))
    assert lost == {"florin": {CM}, "guilder": {CM}, "ducat": {CM, APP_NS}}
    assert log == {"florin": [("delete", CM)], "guilder": [("delete", CM)],
                   "ducat": [("delete", CM), ("delete", APP_NS)]}
    assert dirty == {"florin", "guilder", "ducat"}


def test_object_label_change_stops_matching_only_where_no_other_placement_selects_it() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_object(wobj("ws", "configmaps", "app", "cm",
                                                                       {"app": "api"}, revision=2)))
    assert lost == {"florin": {CM}}  # `narrow` still selects cm by name for guilder and ducat
    assert log["florin"] == [("delete", CM)]
    assert log["guilder"] == [("upsert", CM)] and log["ducat"] == [("upsert", CM)]  # new revision
    assert dirty == {"florin", "guilder", "ducat"}


def test_namespace_label_change_stops_matching() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_object(wobj("ws", "namespaces", "", "app",
                                                                       {"team": "b"}, revision=2)))
    assert lost == {"florin": {CM, OTHER, APP_NS}, "guilder": {OTHER}}
    assert log == {"florin": [("delete", OTHER), ("delete", CM), ("delete", APP_NS)], "guilder": [("delete", OTHER)]}
    assert dirty == {"florin", "guilder"}


def test_placement_deleted_removes_only_what_no_other_placement_covers() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.delete_placement("ws", "wide"))
    assert lost == {"florin": {CM, OTHER, APP_NS}, "guilder": {OTHER}}
    assert log == {"florin": [("delete", OTHER), ("delete", CM), ("delete", APP_NS)], "guilder": [("delete", OTHER)]}
    assert dirty == {"florin", "guilder"}
    assert engine.destinations("ws", "wide") == []


def test_placement_location_selector_edited() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_placement("ws", placement(
        "wide", [{"matchLabels": {"loc-name": "guilder"}}], [
            {"resources": ["configmaps"], "namespaceSelectors": [{"matchLabels": {"team": "a"}}],
             "labelSelectors": [{"matchLabels": {"app": "web"}}]}])))
    assert lost == {"florin": {CM, OTHER, APP_NS}}
    assert set(log) == {"florin"}
    assert dirty == {"florin"}
    assert engine.drain_dirty() == (set(), set())


def test_placement_downsync_edited() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_placement("ws", placement(
        "wide", [{"matchLabels": {"env": "prod"}}], [{"resources": ["configmaps"], "objectNames": ["cm"]}])))
    assert lost == {"florin": {OTHER}, "guilder": {OTHER}}
    assert log == {"florin": [("delete", OTHER)], "guilder": [("delete", OTHER)]}
    assert dirty == {"florin", "guilder"}


def test_sync_target_relabelled_out_of_its_location() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_sync_target(
        {"metadata": {"name": "guilder", "uid": "uid-guilder", "labels": {"id": "retired"}}}))
    assert lost == {"guilder": {CM, OTHER, APP_NS}}
    assert set(log) == {"guilder"} and dirty == {"guilder"}
    assert engine.destinations("ws", "wide") == [Destination("florin", "florin", "uid-florin")]
    assert engine.destinations("ws", "narrow") == [Destination("ducat", "ducat", "uid-ducat")]


def test_location_relabelled() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_location(location("guilder", {"env": "prod"})))
    assert lost == {}  # guilder is still reached by `wide`, which also selects cm
    assert log == {} and dirty == set()
    lost, log, dirty = run_path(engine, lambda e: e.upsert_location(location("guilder", {"env": "dev"})))
    assert lost == {"guilder": {CM, OTHER, APP_NS}}
    assert dirty == {"guilder"}
    assert engine.matching_location_count("ws", "wide") == 1


def test_location_deleted() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.delete_location("ducat"))
    assert lost == {"ducat": {CM, APP_NS}}
    assert log == {"ducat": [("delete", CM), ("delete", APP_NS)]}
    assert dirty == {"ducat"}
    assert engine.destinations("ws", "narrow") == [Destination("guilder", "guilder", "uid-guilder")]


def test_sync_target_deleted() -> None:
    engine = overlap_engine()
    lost, log, dirty = run_path(engine, lambda e: e.delete_sync_target("florin"))
    assert lost == {"florin": {CM, OTHER, APP_NS}}
    assert set(log) == {"florin"} and dirty == {"florin"}
    assert engine.desired("florin") == []
    placements, _ = engine.drain_dirty()
    assert placements == set()
    engine.delete_sync_target("guilder")
    assert engine.drain_dirty()[0] == {("ws", "wide"), ("ws", "narrow")}


def test_deletion_timestamp_counts_as_deleted() -> None:
    engine = overlap_engine()
    gone = placement("wide", [{"matchLabels": {"env": "prod"}}], [])
    gone["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    engine.upsert_placement("ws", gone)
    assert engine.destinations("ws", "wide") == []
    assert refs(engine, "florin") == set()


def test_implicit_namespace_stays_while_needed_and_follows_explicit_selection() -> None:
    engine = overlap_engine()
    before = engine.current_seq("florin")
    engine.delete_object(OTHER)
    assert APP_NS in refs(engine, "florin")  # cm still needs it
    engine.upsert_placement("ws", placement("ns", [{"matchLabels": {"loc-name": "florin"}}],
                                            [{"resources": ["namespaces"], "objectNames": ["app"]}]))
    entry = next(e for e in engine.desired("florin") if e.ref == APP_NS)
    assert not entry.implicit and entry.placements == (("ws", "ns"),)
    engine.delete_object(CM)
    assert [(e.ref, e.implicit) for e in engine.desired("florin")] == [(APP_NS, False)]
    engine.delete_placement("ws", "ns")
    assert engine.desired("florin") == []
    changes = engine.changes_since("florin", before)
    assert changes is not None
    assert [(c.op, c.entry.ref, c.entry.implicit) for c in changes] == [
        ("delete", OTHER, False), ("upsert", APP_NS, False), ("delete", CM, False), ("delete", APP_NS, False)]


def test_explicit_namespace_unselected_falls_back_to_implicit() -> None:
    engine = overlap_engine()
    engine.upsert_placement("ws", placement("ns", [{"matchLabels": {"loc-name": "florin"}}],
                                            [{"resources": ["namespaces"], "objectNames": ["app"]}]))
    seq = engine.current_seq("florin")
    engine.delete_placement("ws", "ns")
    changes = engine.changes_since("florin", seq)
    assert changes is not None
    assert [(c.op, c.entry.ref, c.entry.implicit) for c in changes] == [("upsert", APP_NS, True)]
    assert next(e for e in engine.desired("florin") if e.ref == APP_NS).implicit


# ----------------------------------------------------------------------------------------------
# Relabeling and new targets


def test_relabeling_moves_objects_on_and_off_a_target() -> None:
    engine = overlap_engine()
    seq = engine.current_seq("ducat")
    engine.upsert_location(location("ducat", {"env": "prod", "extended": "yes"}))
    assert refs(engine, "ducat") == {APP_NS, CM, OTHER}
    engine.upsert_location(location("ducat", {"env": "dev"}))
    assert refs(engine, "ducat") == set()
    engine.upsert_location(location("ducat", {"env": "dev", "extended": "yes"}))
    assert refs(engine, "ducat") == {APP_NS, CM}
    changes = engine.changes_since("ducat", seq)
    assert changes is not None
    assert [(c.op, c.entry.ref) for c in changes] == [
        ("upsert", OTHER), ("delete", OTHER), ("delete", CM), ("delete", APP_NS), ("upsert", APP_NS), ("upsert", CM)]


def test_new_matching_target_gets_everything_at_once(example1: PlacementEngine) -> None:
    # A syncer that registered before its SyncTarget existed sees one batch, in apply order.
    seq = example1.current_seq("kreuzer")
    assert example1.desired("kreuzer") == []
    example1.upsert_location(location("kreuzer", {"env": "prod", "extended": "yes"}))
    example1.upsert_sync_target(sync_target("kreuzer"))
    assert view(example1.desired("kreuzer")) == GUILDER
    changes = example1.changes_since("kreuzer", seq)
    assert changes is not None
    assert [c.op for c in changes] == ["upsert"] * len(GUILDER)
    assert [c.entry for c in changes] == example1.desired("kreuzer")
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)
    placements, dirty = example1.drain_dirty()
    assert placements == {("wmw-c", "edge-placement-c"), ("wmw-s", "edge-placement-s")}
    assert dirty == {"kreuzer"}
    assert Destination("kreuzer", "kreuzer", "uid-kreuzer") in example1.destinations("wmw-c", "edge-placement-c")


def test_several_locations_selecting_one_target() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    engine.upsert_location(location("prod-pool", {"env": "prod"}, {"matchLabels": {"env": "prod"}}))
    load_common(engine)
    assert engine.destinations("wmw-c", "edge-placement-c") == [
        Destination("florin", "florin", "uid-florin"), Destination("guilder", "guilder", "uid-guilder"),
        Destination("prod-pool", "florin", "uid-florin"), Destination("prod-pool", "guilder", "uid-guilder")]
    assert engine.matching_location_count("wmw-c", "edge-placement-c") == 3
    assert view(engine.desired("florin")) == FLORIN
    engine.delete_location("florin")
    assert view(engine.desired("florin")) == FLORIN  # still covered through prod-pool


def test_sync_target_uid_change_dirties_its_placements(example1: PlacementEngine) -> None:
    example1.upsert_sync_target(sync_target("florin", {"loc-name": "florin", "env": "prod"}, uid="new"))
    placements, targets = example1.drain_dirty()
    assert placements == {("wmw-c", "edge-placement-c")}
    assert targets == set()
    assert Destination("florin", "florin", "new") in example1.destinations("wmw-c", "edge-placement-c")


def test_revision_change_is_an_upsert_only_where_placed(example1: PlacementEngine) -> None:
    seqs = {t: example1.current_seq(t) for t in ("florin", "guilder")}
    example1.upsert_object(wobj("wmw-s", "deployments.apps", "specialstuff", "speciald", revision=2))
    assert example1.changes_since("florin", seqs["florin"]) == []
    changes = example1.changes_since("guilder", seqs["guilder"])
    assert changes is not None and [(c.op, c.entry.ref.name) for c in changes] == [("upsert", "speciald")]
    assert example1.drain_dirty() == (set(), {"guilder"})
    example1.upsert_object(wobj("wmw-s", "deployments.apps", "specialstuff", "speciald", revision=2))
    assert example1.drain_dirty() == (set(), set())


def test_delete_space(example1: PlacementEngine) -> None:
    example1.delete_space("wmw-s")
    assert view(example1.desired("guilder")) == FLORIN
    assert example1.destinations("wmw-s", "edge-placement-s") == []
    example1.delete_space("inventory")
    assert example1.desired("florin") == []
    assert example1.matching_location_count("wmw-c", "edge-placement-c") == 0


# ----------------------------------------------------------------------------------------------
# Change log


def test_change_log_resume_and_too_old() -> None:
    engine = PlacementEngine(change_log_size=3)
    load_inventory(engine)
    load_common(engine)
    # First contact: the log starts now, so seq 0 means "resync from desired()".
    seq = engine.current_seq("florin")
    assert seq > 0
    assert engine.changes_since("florin", 0) is None
    assert engine.changes_since("florin", seq) == []
    assert engine.changes_since("florin", seq + 1) is None  # from the future (an earlier hub process)
    engine.upsert_object(wobj("wmw-c", "replicasets.apps", "commonstuff", "commond", revision=2))
    engine.upsert_object(wobj("wmw-c", "replicasets.apps", "commonstuff", "commond", revision=3))
    changes = engine.changes_since("florin", seq)
    assert changes is not None and [c.op for c in changes] == ["upsert", "upsert"]
    mid = changes[0].seq
    assert engine.changes_since("florin", mid) == changes[1:]
    assert engine.current_seq("florin") == changes[-1].seq
    engine.delete_object(ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    engine.delete_object(ref("wmw-c", "replicasets.apps", "commonstuff", "commond"))
    # Five changes since `seq` but only the last three are retained: too old from `seq` or `mid`.
    assert engine.changes_since("florin", seq) is None
    assert engine.changes_since("florin", mid) is None
    tail = engine.changes_since("florin", changes[-1].seq)
    assert tail is not None
    assert [(c.op, c.entry.ref.name) for c in tail] == [
        ("delete", "httpd-htdocs"), ("delete", "commond"), ("delete", "commonstuff")]


def test_first_contact_on_a_fresh_engine_and_first_seq() -> None:
    engine = PlacementEngine(first_seq=1000)
    assert engine.current_seq("florin") == 1001
    assert engine.changes_since("florin", 5) is None
    load_inventory(engine)
    load_common(engine)
    changes = engine.changes_since("florin", 1001)
    assert changes is not None
    replayed = {c.entry.ref for c in changes if c.op == "upsert"} - {c.entry.ref for c in changes if c.op == "delete"}
    assert replayed == refs(engine, "florin")
    fresh = PlacementEngine()
    assert fresh.changes_since("florin", 0) is None  # seq 0 means "never synced": always a full resync
    assert fresh.desired("florin") == []


def test_untracked_targets_keep_no_log() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    load_common(engine)
    assert engine.stats()["tracked_targets"] == 0  # the initial load floods nothing
    assert engine.drain_dirty()[1] == {"florin", "guilder"}


# ----------------------------------------------------------------------------------------------
# Downsync test semantics


def test_downsync_field_semantics() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    objects = [wobj("ws", "namespaces", "", "app", {"team": "a"}), wobj("ws", "configmaps", "app", "cm"),
               wobj("ws", "deployments.apps", "app", "d", {"tier": "web"}),
               wobj("ws", "apiservices.apiregistration.k8s.io", "", "v1.x"),
               wobj("ws", "configmaps", "other", "cm2")]
    for obj in objects:
        engine.upsert_object(obj)

    def selected(*tests: dict[str, Any]) -> set[str]:
        engine.upsert_placement("ws", placement("p", [{}], list(tests)))
        return {r.name for r in engine.selected_objects("ws", "p")}

    assert selected({"apiGroup": ""}) == {"app", "cm", "cm2"}
    assert selected({"apiGroup": "apps"}) == {"d"}
    assert selected({"resources": ["*"], "namespaces": ["app"]}) == {"cm", "d"}
    assert selected({"namespaces": ["*"]}) == set()  # discriminates nothing: ignored
    assert selected({"apiGroup": None, "namespaces": ["*"], "objectNames": ["*"]}) == set()
    assert selected({"resources": ["apiservices", "configmaps"]}) == {"v1.x", "cm", "cm2"}
    assert selected({"resources": ["apiservices"], "namespaces": ["app"]}) == set()  # cluster-scoped needs "*"
    assert selected({"resources": ["apiservices"], "namespaces": ["*"]}) == {"v1.x"}
    assert selected({"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}) == {"cm", "d"}
    assert selected({"resources": ["apiservices", "configmaps"], "namespaceSelectors": [{}]}) == {"v1.x", "cm"}
    assert selected({"resources": ["namespaces"], "namespaceSelectors": [{"matchLabels": {"team": "a"}}]}) == set()
    assert selected({"labelSelectors": [{"matchLabels": {"tier": "web"}}, {"matchLabels": {"x": "y"}}]}) == {"d"}
    assert selected({"labelSelectors": [{}]}) == set()
    assert selected({"resources": ["configmaps"]}, {"objectNames": ["d"]}) == {"cm", "cm2", "d"}
    assert engine.selected_objects("ws", "p")[ref("ws", "configmaps", "app", "cm")] == [0]
    assert selected({"namespaces": []}, {"objectNames": ["cm"]}) == {"cm"}
    assert selected({"labelSelectors": [{"matchExpressions": [{"key": "tier", "operator": "Bogus"}]}]}) == set()
    assert any("not a valid label selector operator" in p for p in engine.problems("ws", "p"))


def test_namespace_created_after_its_objects_enables_namespace_selectors() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    engine.upsert_placement("ws", placement("p", [{}], [{"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}]))
    engine.upsert_object(wobj("ws", "configmaps", "app", "cm"))
    assert refs(engine, "florin") == set()
    engine.upsert_object(wobj("ws", "namespaces", "", "app", {"team": "a"}))
    assert refs(engine, "florin") == {CM, APP_NS}
    engine.delete_object(APP_NS)
    assert refs(engine, "florin") == set()


# ----------------------------------------------------------------------------------------------
# explain


def test_explain_placement_that_matches_nothing(example1: PlacementEngine) -> None:
    spec = {"locationSelectors": [{"matchLabels": {"env": "staging"}},
                                  {"matchLabels": {"extended": "yes", "gpu": "a100"}}],
            "downsync": [{"apiGroup": "", "resources": ["configmap"], "namespaces": ["commonstuff"]},
                         {"apiGroup": "apps", "resources": ["replicasets"],
                          "labelSelectors": [{"matchLabels": {"app": "web"}}]},
                         {"namespaces": ["*"]}]}
    ex = example1.explain("wmw-c", spec)
    assert ex.destinations == [] and ex.matched_locations == {} and ex.objects == {}
    assert [(m.name, m.reasons) for m in ex.location_mismatches] == [
        ("florin", ["locationSelectors[0]: label env=staging: Location has env=prod",
                    "locationSelectors[1]: label extended=yes: missing; label gpu=a100: missing"]),
        ("guilder", ["locationSelectors[0]: label env=staging: Location has env=prod",
                     "locationSelectors[1]: label gpu=a100: missing"]),
    ]
    assert ex.target_mismatches == []
    reasons = {m.name: m.reasons for m in ex.object_mismatches}
    assert reasons["configmaps commonstuff/httpd-htdocs"] == [
        "downsync[0].resources: configmaps not in [configmap] (resources are lower-case plurals)",
        'downsync[1].apiGroup: object group "" is not "apps"',
        "downsync[2]: ignored: no field discriminates",
    ]
    assert reasons["replicasets.apps commonstuff/commond"][:2] == [
        'downsync[0].apiGroup: object group "apps" is not ""',
        "downsync[1].labelSelectors: app=web not satisfied (labels: none)",
    ]
    assert reasons["namespaces commonstuff"][0] == "downsync[0].resources: namespaces not in [configmap]"
    assert ex.problems == ["downsync[2]: no field discriminates; at least one must (the test matches nothing)"]


def test_explain_reasons_for_targets_namespaces_and_cluster_scope(example1: PlacementEngine) -> None:
    example1.upsert_location(location("broken", {"env": "prod"}, resource={"group": "apps", "resource": "deployments"}))
    example1.upsert_sync_target(sync_target("spare", {"env": "prod"}))
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
            "downsync": [{"resources": ["configmaps"], "namespaceSelectors": [{"matchLabels": {"special": "no"}}]},
                         {"resources": ["apiservices"], "namespaces": ["specialstuff"]}]}
    ex = example1.explain("wmw-s", spec)
    assert [d.sync_target_name for d in ex.destinations] == ["florin", "guilder"]
    assert ex.matched_locations == {"broken": [0], "florin": [0], "guilder": [0]}
    assert [(m.name, m.reasons) for m in ex.target_mismatches] == [("spare", [
        "location broken: spec.resource is deployments.apps, not synctargets.edge.kubestellar.io; it selects nothing",
        "location florin: instanceSelector id=florin: label id=florin: SyncTarget has id=spare",
        "location guilder: instanceSelector id=guilder: label id=guilder: SyncTarget has id=spare",
    ])]
    assert "location broken: spec.resource is deployments.apps, not synctargets.edge.kubestellar.io; " \
           "it selects nothing" in ex.problems
    reasons = {m.name: m.reasons for m in ex.object_mismatches}
    assert reasons["configmaps specialstuff/httpd-htdocs"][0] == (
        "downsync[0].namespaceSelectors: special=no not satisfied (namespace specialstuff labels: special=yes)")
    assert reasons["apiservices.apiregistration.k8s.io v1090.example.my"][1] == (
        'downsync[1].namespaces: object is cluster-scoped; only "*" matches cluster-scoped objects')
    # explain stores nothing
    assert example1.destinations("wmw-s", "edge-placement-s") == [Destination("guilder", "guilder", "uid-guilder")]


def test_explain_stored_spec_matches_engine(example1: PlacementEngine) -> None:
    ex = example1.explain("wmw-s", EXAMPLE_S)
    assert ex.destinations == example1.destinations("wmw-s", "edge-placement-s")
    assert ex.objects == example1.selected_objects("wmw-s", "edge-placement-s")
    assert ex.missing_crds == [] and ex.problems == []
    no_crd = {"locationSelectors": [{}], "downsync": [{"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]}]}
    assert example1.explain("wmw-s", no_crd).missing_crds == ["crontabs.stable.example.com"]


# ----------------------------------------------------------------------------------------------
# Incremental results equal a from-scratch computation, and logs replay to desired().


PKey = tuple[str, str]


def _random_world(rng: random.Random) -> dict[str, Any]:
    return {
        "locations": {f"l{i}": location(f"l{i}", {"env": rng.choice(["prod", "dev"]), "x": rng.choice("ab")},
                                        {"matchLabels": {"site": rng.choice(["s0", "s1", "s2"])}})
                      for i in range(4)},
        "targets": {f"t{i}": sync_target(f"t{i}", {"site": rng.choice(["s0", "s1", "s2"])}) for i in range(5)},
        "placements": {},
        "objects": {},
    }


PLACEMENT_POOL = [
    ([{"matchLabels": {"env": "prod"}}], [{"resources": ["configmaps"]}]),
    ([{"matchLabels": {"x": "a"}}], [{"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}]),
    ([{}], [{"labelSelectors": [{"matchLabels": {"app": "web"}}]}, {"resources": ["namespaces"]}]),
    ([{"matchLabels": {"env": "dev"}}, {"matchLabels": {"x": "b"}}], [{"apiGroup": "apps"}]),
    ([{"matchLabels": {"env": "prod", "x": "b"}}], [{"objectNames": ["o1", "o2", "n0"]}]),
]


def _random_object(rng: random.Random, space: str) -> WorkloadObject:
    if rng.random() < 0.2:
        return wobj(space, "namespaces", "", f"n{rng.randrange(3)}", {"team": rng.choice("ab")},
                    revision=rng.randrange(5))
    resource = rng.choice(["configmaps", "deployments.apps"])
    return wobj(space, resource, f"n{rng.randrange(3)}", f"o{rng.randrange(4)}",
                {"app": rng.choice(["web", "api"])}, revision=rng.randrange(5))


def _build(world: dict[str, Any]) -> PlacementEngine:
    engine = PlacementEngine()
    for obj in world["objects"].values():
        engine.upsert_object(obj)
    for (space, _), p in world["placements"].items():
        engine.upsert_placement(space, p)
    for loc in world["locations"].values():
        engine.upsert_location(loc)
    for t in world["targets"].values():
        engine.upsert_sync_target(t)
    return engine


@pytest.mark.parametrize("seed", range(12))
def test_incremental_equals_from_scratch_and_logs_replay(seed: int) -> None:
    rng = random.Random(seed)
    world = _random_world(rng)
    engine = _build(world)
    target_names = [f"t{i}" for i in range(6)]  # t5 never exists until created below
    replicas: dict[str, dict[ObjectRef, tuple[str, bool, int | None]]] = {}
    seqs: dict[str, int] = {}

    def revision(r: ObjectRef) -> int | None:
        obj = world["objects"].get(r)
        return obj.revision if obj is not None else None

    def sync(t: str) -> None:
        changes = engine.changes_since(t, seqs[t])
        if changes is None:  # resync
            replicas[t] = {e.ref: (e.kind, e.implicit, None if e.implicit else revision(e.ref))
                           for e in engine.desired(t)}
            seqs[t] = engine.current_seq(t)
            return
        for c in changes:
            if c.op == "upsert":
                replicas[t][c.entry.ref] = (c.entry.kind, c.entry.implicit,
                                            None if c.entry.implicit else revision(c.entry.ref))
            else:
                replicas[t].pop(c.entry.ref, None)
            seqs[t] = c.seq

    def observed(fresh: PlacementEngine) -> tuple[dict[str, set[Any]], dict[PKey, Any]]:
        """What drain_dirty must report changes of: desired entries (with object content) and placement outputs."""
        desired = {t: {(e.ref, e.kind, e.implicit, None if e.implicit else world["objects"].get(e.ref))
                       for e in fresh.desired(t)} for t in target_names}
        outputs = {key: (fresh.destinations(*key), fresh.matching_location_count(*key),
                         fresh.selected_objects(*key), fresh.missing_crds(*key)) for key in world["placements"]}
        return desired, outputs

    engine.drain_dirty()
    previous = observed(_build(world))
    peeked: dict[str, int] = {}
    for step in range(250):
        op = rng.random()
        if op < 0.35:
            obj = _random_object(rng, rng.choice(["s1", "s2"]))
            world["objects"][obj.ref] = obj
            engine.upsert_object(obj)
        elif op < 0.5 and world["objects"]:
            r = rng.choice(sorted(world["objects"]))
            del world["objects"][r]
            engine.delete_object(r)
        elif op < 0.62:
            space, name = rng.choice(["s1", "s2"]), f"p{rng.randrange(3)}"
            where, what = rng.choice(PLACEMENT_POOL)
            p = placement(name, where, what, singleton=rng.random() < 0.5)
            world["placements"][(space, name)] = p
            engine.upsert_placement(space, p)
        elif op < 0.67 and world["placements"]:
            key = rng.choice(sorted(world["placements"]))
            del world["placements"][key]
            engine.delete_placement(*key)
        elif op < 0.77:
            name = rng.choice(target_names)
            t = sync_target(name, {"site": rng.choice(["s0", "s1", "s2"])}, uid=f"u{rng.randrange(2)}")
            world["targets"][name] = t
            engine.upsert_sync_target(t)
        elif op < 0.8 and world["targets"]:
            name = rng.choice(sorted(world["targets"]))
            del world["targets"][name]
            engine.delete_sync_target(name)
        elif op < 0.9:
            name = f"l{rng.randrange(5)}"
            loc = location(name, {"env": rng.choice(["prod", "dev"]), "x": rng.choice("ab")},
                           {"matchLabels": {"site": rng.choice(["s0", "s1", "s2"])}})
            world["locations"][name] = loc
            engine.upsert_location(loc)
        elif op < 0.93 and world["locations"]:
            name = rng.choice(sorted(world["locations"]))
            del world["locations"][name]
            engine.delete_location(name)
        else:
            t = rng.choice(target_names)
            if t not in seqs:
                seqs[t] = -1  # forces a first resync
                replicas[t] = {}
            sync(t)
        for t in seqs:
            # One input call logs each target's net change: no entry twice (no delete-then-recreate).
            step_changes = engine.changes_since(t, peeked.get(t, seqs[t]))
            if step_changes is not None and seqs[t] >= 0:
                changed_refs = [c.entry.ref for c in step_changes]
                assert len(changed_refs) == len(set(changed_refs)), (seed, step, t, step_changes)
            peeked[t] = engine.current_seq(t)
        current = observed(_build(world))
        dirty_placements, dirty_targets = engine.drain_dirty()
        assert dirty_targets == {t for t in target_names if previous[0][t] != current[0][t]}, (seed, step)
        for key in previous[1].keys() | current[1].keys():
            if previous[1].get(key) != current[1].get(key):
                assert key in dirty_placements, (seed, step, key)
        previous = current
        if step % 25 == 24:
            fresh = _build(world)
            for t in target_names:
                assert engine.desired(t) == fresh.desired(t), (seed, step, t)
            for space, name in world["placements"]:
                assert engine.destinations(space, name) == fresh.destinations(space, name)
                assert engine.selected_objects(space, name) == fresh.selected_objects(space, name)
                assert engine.missing_crds(space, name) == fresh.missing_crds(space, name)
            for r in world["objects"]:
                assert engine.object_destinations(r) == fresh.object_destinations(r)
                assert engine.wants_singleton_status(r) == fresh.wants_singleton_status(r)
            for t in list(seqs):
                sync(t)
                expected = {e.ref: (e.kind, e.implicit, None if e.implicit else revision(e.ref))
                            for e in engine.desired(t)}
                assert replicas[t] == expected, (seed, step, t)


# ----------------------------------------------------------------------------------------------
# Cordon and drain


def cordoned(target: dict[str, Any]) -> dict[str, Any]:
    return {**target, "spec": {"unschedulable": True}}


def test_a_cordoned_target_keeps_what_covers_it_and_is_reached_by_no_new_placement() -> None:
    engine = PlacementEngine("imw")
    load_inventory(engine)
    engine.upsert_placement("wmw-c", EXAMPLE_C)
    cm = ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs")
    engine.upsert_object(wobj("wmw-c", "namespaces", "", "commonstuff"))
    engine.upsert_object(wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    engine.upsert_sync_target(cordoned(sync_target("guilder", {"loc-name": "guilder", "env": "prod",
                                                               "extended": "yes"})))
    assert cm in refs(engine, "guilder")  # what it had stays
    engine.upsert_object(wobj("wmw-s", "namespaces", "", "specialstuff", {"special": "yes"}))
    engine.upsert_placement("wmw-s", EXAMPLE_S)  # a placement matching it now does not reach it
    assert ref("wmw-s", "namespaces", "", "specialstuff") not in refs(engine, "guilder")
    assert "guilder" not in {d.sync_target_name for d in engine.destinations("wmw-s", "edge-placement-s")}
    assert "guilder" in {d.sync_target_name for d in engine.destinations("wmw-c", "edge-placement-c")}
    engine.upsert_sync_target(sync_target("guilder", {"loc-name": "guilder", "env": "prod", "extended": "yes"}))
    assert ref("wmw-s", "namespaces", "", "specialstuff") in refs(engine, "guilder")  # uncordoned


def test_an_evicted_target_loses_everything_and_gets_it_back_when_taken_back() -> None:
    engine = PlacementEngine("imw")
    load_inventory(engine)
    engine.upsert_placement("wmw-c", EXAMPLE_C)
    engine.upsert_object(wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    engine.set_evicted("florin", True)
    assert refs(engine, "florin") == set() and engine.evicted("florin")
    assert "florin" not in engine.object_destinations(ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    engine.upsert_location(location("florin", {"loc-name": "florin", "env": "prod", "zone": "a"}))
    assert refs(engine, "florin") == set()  # a Location change does not select it again
    engine.set_evicted("florin", False)
    assert ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs") in refs(engine, "florin")


def test_an_object_naming_its_target_clusters_goes_only_to_those_of_its_destinations() -> None:
    engine = PlacementEngine("imw")
    load_inventory(engine)
    engine.upsert_placement("wmw-c", EXAMPLE_C)
    cm = ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs")
    engine.upsert_object(wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    seq = {t: engine.current_seq(t) for t in ("florin", "guilder")}
    engine.narrow(cm, frozenset({"guilder"}))
    assert cm not in refs(engine, "florin") and cm in refs(engine, "guilder")
    assert engine.object_destinations(cm) == ["guilder"]
    assert [(c.op, c.entry.ref) for c in engine.changes_since("florin", seq["florin"]) or []] == [("delete", cm)]
    engine.narrow(cm, None)
    assert cm in refs(engine, "florin")
    assert [c.op for c in engine.changes_since("florin", seq["florin"]) or []] == ["delete", "upsert"]
