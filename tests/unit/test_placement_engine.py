"""Placement engine: where and what resolution, desired sets, ordering, downsync semantics, explain, and
incremental results equal to a computation from scratch (the scenario is tests.placement_world's example1).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from typing import Any

import pytest

from placement.downsync import FOLLOWED
from placement.engine import PlacementEngine
from placement.model import DesiredEntry, Destination, ObjectRef, WorkloadObject
from placement.ordering import apply_order, deletion_order
from placement.scheduler import Candidate, choose
from tests.placement_world import (
    CRD,
    EXAMPLE_S,
    FLORIN,
    GUILDER,
    load_common,
    load_inventory,
    load_special,
    location,
    ns_ref,
    placement,
    ref,
    refs,
    sync_target,
    view,
    wobj,
)

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


def test_a_bound_apis_custom_resources_are_served_and_bring_the_providers_crd_when_followed() -> None:
    engine = PlacementEngine()
    load_inventory(engine)
    crontabs = ("stable.example.com", "crontabs")
    provider_crd = ref("prov", CRD, "", "crontabs.stable.example.com")
    engine.upsert_object(wobj("prov", CRD, "", "crontabs.stable.example.com"))
    spec = placement("p", [{"matchLabels": {"env": "prod", "extended": "yes"}}],
                     [{"apiGroup": "stable.example.com", "resources": ["crontabs"], "namespaces": ["*"]}])
    spec["spec"]["crdFollow"] = True
    engine.upsert_placement("cons", spec)
    cron = wobj("cons", "crontabs.stable.example.com", "jobs", "nightly")
    engine.upsert_object(wobj("cons", "namespaces", "", "jobs"))
    engine.upsert_object(cron)
    # Before the binding is known the space serves no such resource.
    assert engine.unserved_resources("cons", "p") == ["crontabs.stable.example.com"]
    assert provider_crd not in refs(engine, "guilder")

    engine.drain_dirty()
    seq = engine.current_seq("guilder")
    engine.set_bound("cons", {crontabs: "prov"})
    assert engine.unserved_resources("cons", "p") == [] and engine.missing_crds("cons", "p") == []
    assert ("cons", "p") in engine.drain_dirty()[0]
    # The provider's CRD goes with the custom resource, only by following (no test selects another space's).
    assert engine.selected_objects("cons", "p")[provider_crd] == [FOLLOWED]
    assert [(c.op, c.entry.ref) for c in engine.changes_since("guilder", seq) or []] == [("upsert", provider_crd)]
    entries = [e.ref for e in engine.desired("guilder")]
    assert entries.index(provider_crd) < entries.index(cron.ref)

    # Unbound: the CRD leaves the cluster (the custom resource stays selected, its CRD now missing).
    engine.set_bound("cons", {})
    assert provider_crd not in refs(engine, "guilder") and cron.ref in refs(engine, "guilder")
    assert engine.unserved_resources("cons", "p") == ["crontabs.stable.example.com"]

    # Bound before the provider's CRD is seen: it follows as soon as it arrives.
    engine.delete_object(provider_crd)
    engine.set_bound("cons", {crontabs: "prov"})
    assert provider_crd not in refs(engine, "guilder")
    engine.upsert_object(wobj("prov", CRD, "", "crontabs.stable.example.com"))
    assert engine.selected_objects("cons", "p")[provider_crd] == [FOLLOWED]
    assert provider_crd in refs(engine, "guilder")


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
    app_ns = ns_ref("ws", "app")
    assert refs(engine, "florin") == {ref("ws", "configmaps", "app", "cm"), app_ns}
    engine.delete_object(app_ns)
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
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


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


def _sizes(engine: PlacementEngine) -> Counter[int]:
    """How many targets hold a desired set of each size, from the engine's counts."""
    out: Counter[int] = Counter()
    for size, targets in engine.desired_set_sizes():
        out[size] += targets
    return out


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
            # The metrics' counts equal the listed results, whether the desired sets are cached or not.
            sizes = Counter(len(fresh.desired(t)) for t in world["targets"])
            for e in (engine, fresh):
                assert _sizes(e) == sizes, (seed, step)
                e.forget_cached_desired_sets()
                assert _sizes(e) == sizes, (seed, step)
            assert engine.destination_count() == sum(len(engine.destinations(*key)) for key in world["placements"])
            for t in list(seqs):
                sync(t)
                expected = {e.ref: (e.kind, e.implicit, None if e.implicit else revision(e.ref))
                            for e in engine.desired(t)}
                assert replicas[t] == expected, (seed, step, t)



# ----------------------------------------------------------------------------------------------
# Scheduled placements (numberOfClusters, spread, scores): the model-based test with choices


SCHEDULING_POOL: list[dict[str, Any]] = [
    {},
    {"numberOfClusters": 1},
    {"numberOfClusters": 2, "spreadConstraints": [{"topologyKey": "site", "maxSkew": 1}]},
    {"numberOfClusters": 3, "prioritizers": [{"type": "Label", "labelKey": "site", "values": {"s0": 100, "s1": 50}}]},
    {"numberOfClusters": 2, "spreadConstraints": [{"topologyKey": "site", "whenUnsatisfiable": "ScheduleAnyway"}],
     "prioritizers": [{"type": "CEL", "expression": "cluster.name == 't3' ? 100 : 10", "weight": 2}]},
]


def _candidates(engine: PlacementEngine, world: dict[str, Any], key: PKey) -> dict[str, Candidate]:
    return {n: Candidate(n, world["targets"][n]["metadata"]["labels"]) for n in engine.candidates(*key)
            if n in world["targets"]}


def _decide(engine: PlacementEngine, world: dict[str, Any], keys: Any) -> None:
    """What the lease holder's Choices do, without the store: the due placements' choices, kept in the world and
    handed to the engine in one batch (the rebuild gives them one at a time)."""
    batch = {}
    for key in sorted(keys):
        spec = engine.scheduling(*key)
        if spec is None:
            world["choices"].pop(key, None)
            continue
        decision = choose(spec, _candidates(engine, world, key), world["choices"].get(key), NOW)
        world["choices"][key] = decision.chosen
        batch[key] = frozenset(decision.chosen)
    engine.set_chosen_many(batch)


def _build_scheduled(world: dict[str, Any]) -> PlacementEngine:
    """From scratch, with the stored choices (a restarted hub adopting what the placements' status holds)."""
    engine = _build(world)
    for key, chosen in world["choices"].items():
        engine.set_chosen(*key, frozenset(chosen))
    return engine


@pytest.mark.parametrize("seed", range(12))
def test_incremental_with_choices_equals_rebuild_and_only_due_placements_change(seed: int) -> None:
    rng = random.Random(1000 + seed)
    world = _random_world(rng)
    world["choices"] = {}
    engine = _build(world)
    target_names = [f"t{i}" for i in range(6)]
    _decide(engine, world, engine.drain_candidates_changed())
    engine.drain_dirty()
    for step in range(200):
        op = rng.random()
        if op < 0.3:
            obj = _random_object(rng, "s1")
            world["objects"][obj.ref] = obj
            engine.upsert_object(obj)
        elif op < 0.55:
            name = f"p{rng.randrange(3)}"
            where, what = rng.choice(PLACEMENT_POOL)
            p = placement(name, where, what)
            p["spec"].update(rng.choice(SCHEDULING_POOL))
            world["placements"][("s1", name)] = p
            engine.upsert_placement("s1", p)
        elif op < 0.6 and world["placements"]:
            key = rng.choice(sorted(world["placements"]))
            del world["placements"][key]
            world["choices"].pop(key, None)
            engine.delete_placement(*key)
        elif op < 0.8:
            name = rng.choice(target_names)
            t = sync_target(name, {"site": rng.choice(["s0", "s1", "s2"])}, uid=f"u{rng.randrange(2)}")
            world["targets"][name] = t
            engine.upsert_sync_target(t)
        elif op < 0.85 and world["targets"]:
            name = rng.choice(sorted(world["targets"]))
            del world["targets"][name]
            engine.delete_sync_target(name)
        else:
            name = f"l{rng.randrange(5)}"
            loc = location(name, {"env": rng.choice(["prod", "dev"]), "x": rng.choice("ab")},
                           {"matchLabels": {"site": rng.choice(["s0", "s1", "s2"])}})
            world["locations"][name] = loc
            engine.upsert_location(loc)
        _decide(engine, world, engine.drain_candidates_changed())
        # Only the due placements were looked at: every other choice is what choosing again would keep.
        for key in world["placements"]:
            spec = engine.scheduling(*key)
            if spec is not None:
                again = choose(spec, _candidates(engine, world, key), world["choices"].get(key), NOW)
                assert again.chosen == world["choices"][key], (seed, step, key)
                assert set(again.chosen) <= engine.candidates(*key)
                spread = spec.spreads[0] if spec.spreads else None
                if spec.number is not None and not (spread and spread.hard):
                    assert len(again.chosen) == min(spec.number, len(engine.candidates(*key))), (seed, step, key)
        engine.drain_dirty()
        if step % 20 == 19:
            fresh = _build_scheduled(world)
            for t in target_names:
                assert engine.desired(t) == fresh.desired(t), (seed, step, t)
                assert engine.covering(t) == fresh.covering(t), (seed, step, t)
            for key in world["placements"]:
                assert engine.destinations(*key) == fresh.destinations(*key), (seed, step, key)
                chosen = world["choices"].get(key)
                if chosen is not None:
                    assert {d.sync_target_name for d in engine.destinations(*key)} == set(chosen), (seed, step, key)
