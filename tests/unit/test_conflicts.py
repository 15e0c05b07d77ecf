"""Conflict detection between spaces placing one cluster object: who wins, what differs, what is re-sent."""

from __future__ import annotations

import asyncio
from typing import Any

from placement.conflicts import Conflicts, differing_fields
from placement.model import ObjectRef

A = ObjectRef("team-a", "configmaps", "shared", "config")
B = ObjectRef("team-b", "configmaps", "shared", "config")


def unmapped(_space: str, namespace: str) -> str:
    return namespace


def cm(created: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config", "namespace": "shared",
                                                                  "creationTimestamp": created}, "data": data}


def run(conflicts: Conflicts, places: dict[ObjectRef, list[str]], copies: dict[ObjectRef, dict[str, Any]]) \
        -> tuple[set[ObjectRef], dict[str, set[ObjectRef]]]:
    async def copy(ref: ObjectRef, _target: str) -> dict[str, Any] | None:
        return copies.get(ref)
    return asyncio.run(conflicts.recompute(lambda ref: places.get(ref, []), copy))


def test_the_object_created_first_wins_and_the_fields_that_differ_are_named() -> None:
    conflicts = Conflicts(unmapped)
    b, a = cm("2026-11-25T10:00:05Z", value="b"), cm("2026-11-25T10:00:00Z", value="a")
    conflicts.object_changed(B, b)
    conflicts.object_changed(A, a)
    changed, resend = run(conflicts, {A: ["florin", "guilder"], B: ["florin"]}, {A: a, B: b})
    lost = conflicts.lost(B, "florin")
    assert lost is not None and lost.winner == A and lost.fields == ("data.value",)
    assert conflicts.lost(A, "florin") is None and conflicts.lost(B, "guilder") is None
    assert changed == {A, B} and resend == {"florin": {A, B}}
    assert [c.loser for c in conflicts.of(A)] == [B]  # the winner is in it too
    assert "space team-a wins, space team-b differs at data.value" in lost.describe()


def test_equal_copies_are_no_conflict_and_a_conflict_ends_when_its_winner_goes() -> None:
    conflicts = Conflicts(unmapped)
    a, b = cm("2026-11-25T10:00:00Z", value="same"), cm("2026-11-25T10:00:05Z", value="same")
    conflicts.object_changed(A, a)
    conflicts.object_changed(B, b)
    assert run(conflicts, {A: ["florin"], B: ["florin"]}, {A: a, B: b}) == (set(), {})
    assert conflicts.all() == []

    b2 = cm("2026-11-25T10:00:05Z", value="other")
    conflicts.object_changed(B, b2)
    run(conflicts, {A: ["florin"], B: ["florin"]}, {A: a, B: b2})
    assert conflicts.lost(B, "florin") is not None
    conflicts.object_changed(A, None)  # team-a's object deleted: team-b's copy is the only one
    changed, resend = run(conflicts, {B: ["florin"]}, {B: b2})
    assert conflicts.lost(B, "florin") is None and changed == {A, B} and B in resend["florin"]


def test_names_used_by_one_space_only_are_never_looked_at() -> None:
    conflicts = Conflicts(unmapped)
    conflicts.object_changed(A, cm("2026-11-25T10:00:00Z", value="a"))
    conflicts.selection_changed([A])
    assert run(conflicts, {}, {}) == (set(), {})


def test_differing_fields_name_paths_to_a_depth_then_the_subtree() -> None:
    assert differing_fields({"spec": {"replicas": 1, "x": {"a": {"b": 1}}}},
                            {"spec": {"replicas": 2, "x": {"a": {"b": 2}}}}) == ["spec.replicas", "spec.x.a"]
    assert differing_fields({"data": {"k": "1"}}, {"data": {"k": "1", "extra": "2"}}) == ["data.extra"]


def test_objects_whose_namespaces_map_apart_are_no_conflict() -> None:
    conflicts = Conflicts(lambda space, namespace: f"{space}-{namespace}")
    conflicts.object_changed(A, cm("2026-11-25T10:00:00Z", value="a"))
    conflicts.object_changed(B, cm("2026-11-25T10:00:05Z", value="b"))
    changed, resend = run(conflicts, {A: ["florin"], B: ["florin"]},
                          {A: cm("2026-11-25T10:00:00Z", value="a"), B: cm("2026-11-25T10:00:05Z", value="b")})
    assert (changed, resend) == (set(), {})
    assert conflicts.all() == []


def test_a_namespace_mapped_onto_another_space_s_unmapped_one_is_a_conflict_on_the_cluster_name() -> None:
    mapping = {("team-a", "app"): "shared"}  # team-a's app lands in the cluster namespace team-b uses as it is
    conflicts = Conflicts(lambda space, namespace: mapping.get((space, namespace), namespace))
    a_ref = ObjectRef("team-a", "configmaps", "app", "config")
    a, b = cm("2026-11-25T10:00:00Z", value="a"), cm("2026-11-25T10:00:05Z", value="b")
    conflicts.object_changed(a_ref, a)
    conflicts.object_changed(B, b)
    changed, resend = run(conflicts, {a_ref: ["florin"], B: ["florin"]}, {a_ref: a, B: b})
    lost = conflicts.lost(B, "florin")
    assert lost is not None and lost.winner == a_ref and lost.ident == ("configmaps", "shared", "config")
    assert changed == {a_ref, B} and resend == {"florin": {a_ref, B}}
    assert "configmaps shared/config on florin: space team-a (as app/config) wins, space team-b differs" \
        in lost.describe()


def test_two_namespaces_mapped_to_one_cluster_namespace_meet_there_and_part_when_remapped() -> None:
    mapping = {("team-a", "app"): "one", ("team-b", "web"): "one"}
    conflicts = Conflicts(lambda space, namespace: mapping.get((space, namespace), namespace))
    a_ref = ObjectRef("team-a", "configmaps", "app", "config")
    b_ref = ObjectRef("team-b", "configmaps", "web", "config")
    a, b = cm("2026-11-25T10:00:00Z", value="a"), cm("2026-11-25T10:00:05Z", value="b")
    conflicts.object_changed(a_ref, a)
    conflicts.object_changed(b_ref, b)
    places, copies = {a_ref: ["florin"], b_ref: ["florin"]}, {a_ref: a, b_ref: b}
    run(conflicts, places, copies)
    assert conflicts.lost(b_ref, "florin") is not None

    mapping[("team-b", "web")] = "two"  # team-b's placement now maps web elsewhere
    conflicts.remap({"team-b": {"web"}})
    changed, resend = run(conflicts, places, copies)
    assert conflicts.all() == [] and conflicts.of(a_ref) == []
    assert changed == {a_ref, b_ref} and resend == {"florin": {a_ref, b_ref}}


def test_namespaces_themselves_are_compared_by_their_cluster_name() -> None:
    mapping = {("team-a", "app"): "shared"}
    conflicts = Conflicts(lambda space, namespace: mapping.get((space, namespace), namespace))
    a_ref, b_ref = ObjectRef("team-a", "namespaces", "", "app"), ObjectRef("team-b", "namespaces", "", "shared")

    def ns(name: str, created: str, tier: str) -> dict[str, Any]:  # kube labels each with its own (space's) name
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": name, "creationTimestamp": created, "labels": {"kubernetes.io/metadata.name": name, "tier": tier}}}
    a, b = ns("app", "2026-11-25T10:00:00Z", "a"), ns("shared", "2026-11-25T10:00:05Z", "b")
    conflicts.object_changed(a_ref, a)
    conflicts.object_changed(b_ref, b)
    run(conflicts, {a_ref: ["florin"], b_ref: ["florin"]}, {a_ref: a, b_ref: b})
    lost = conflicts.lost(b_ref, "florin")
    assert lost is not None and lost.ident == ("namespaces", "", "shared") and lost.fields == ("metadata.labels.tier",)


def test_a_new_space_s_unplaced_object_does_not_look_again_at_every_space_s_object_of_its_name() -> None:
    # Every space has a ``default`` Namespace: creating the 1,001st space must not read the other 1,000.
    conflicts = Conflicts(lambda space, namespace: namespace)
    refs = [ObjectRef(f"s{i}", "namespaces", "", "default") for i in range(1_000)]
    looked_at: list[ObjectRef] = []

    def destinations(ref: ObjectRef) -> list[str]:
        looked_at.append(ref)
        return []

    async def copy(_ref: ObjectRef, _target: str) -> dict[str, Any] | None:
        return None

    for ref in refs:
        conflicts.object_changed(ref, {"metadata": {"name": "default", "creationTimestamp": "2026-11-25T10:00:00Z"}})
        assert asyncio.run(conflicts.recompute(destinations, copy)) == (set(), {})
    assert len(looked_at) <= len(refs)  # each new object once, not each time all of them


def test_equal_bindings_whose_subjects_map_apart_differ_in_the_cluster() -> None:
    """Two spaces' ClusterRoleBindings are written alike, but each names its own space's namespace once mapped:
    one cluster object with two different contents."""
    def binding(created: str) -> dict[str, Any]:
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "api", "creationTimestamp": created},
                "subjects": [{"kind": "ServiceAccount", "name": "api", "namespace": "ate-system"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "api"}}

    def as_sent(space: str, obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "subjects": [{**s, "namespace": f"{space}-{s['namespace']}"} for s in obj["subjects"]]}

    red, blue = (ObjectRef(space, "clusterrolebindings.rbac.authorization.k8s.io", "", "api")
                 for space in ("red", "blue"))
    conflicts = Conflicts(lambda space, namespace: f"{space}-{namespace}" if namespace else "", as_sent)
    copies = {red: binding("2026-11-25T10:00:00Z"), blue: binding("2026-11-25T10:00:05Z")}
    for ref, obj in copies.items():
        conflicts.object_changed(ref, obj)
    run(conflicts, {red: ["wec1"], blue: ["wec1"]}, copies)
    lost = conflicts.lost(blue, "wec1")
    assert lost is not None and lost.winner == red and lost.fields == ("subjects",)


def test_a_conflict_ends_when_the_placements_go_though_the_objects_stay() -> None:
    conflicts = Conflicts(unmapped)
    a, b = cm("2026-11-25T10:00:00Z", value="a"), cm("2026-11-25T10:00:05Z", value="b")
    conflicts.object_changed(A, a)
    conflicts.object_changed(B, b)
    run(conflicts, {A: ["florin"], B: ["florin"]}, {A: a, B: b})
    assert conflicts.lost(B, "florin") is not None
    conflicts.placements_changed()  # both placements deleted: no placement selects either object now
    changed, _resend = run(conflicts, {}, {A: a, B: b})
    assert conflicts.all() == [] and changed == {A, B}
