"""Placement engine over time: deletion paths, relabelling and new targets, change logs, cordon and drain (on
tests.placement_world's example1).
"""

from __future__ import annotations

from typing import Any

from placement.engine import PlacementEngine
from placement.model import Destination, ObjectRef
from tests.placement_world import (
    EXAMPLE_C,
    EXAMPLE_S,
    FLORIN,
    GUILDER,
    load_common,
    load_inventory,
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
# Cordon and drain


def cordoned(target: dict[str, Any]) -> dict[str, Any]:
    return {**target, "spec": {"unschedulable": True}}


SITE = ref("wmw-c", "configmaps", "commonstuff", "httpd-htdocs")


def common_site() -> PlacementEngine:
    """florin and guilder, edge-placement-c, and the web site's ConfigMap it sends to both."""
    engine = PlacementEngine("imw")
    load_inventory(engine)
    engine.upsert_placement("wmw-c", EXAMPLE_C)
    engine.upsert_object(wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"))
    return engine


def test_a_cordoned_target_keeps_what_covers_it_and_is_reached_by_no_new_placement() -> None:
    engine, cm = common_site(), SITE
    engine.upsert_object(wobj("wmw-c", "namespaces", "", "commonstuff"))
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
    engine = common_site()
    engine.set_evicted("florin", True)
    assert refs(engine, "florin") == set() and engine.evicted("florin")
    assert "florin" not in engine.object_destinations(SITE) and not engine.is_destination(SITE, "florin")
    engine.upsert_location(location("florin", {"loc-name": "florin", "env": "prod", "zone": "a"}))
    assert refs(engine, "florin") == set()  # a Location change does not select it again
    engine.set_evicted("florin", False)
    assert SITE in refs(engine, "florin")


def test_an_object_naming_its_target_clusters_goes_only_to_those_of_its_destinations() -> None:
    engine, cm = common_site(), SITE
    seq = {t: engine.current_seq(t) for t in ("florin", "guilder")}
    engine.narrow(cm, frozenset({"guilder"}))
    assert cm not in refs(engine, "florin") and cm in refs(engine, "guilder")
    assert engine.object_destinations(cm) == ["guilder"]
    assert engine.is_destination(cm, "guilder") and not engine.is_destination(cm, "florin")
    assert [(c.op, c.entry.ref) for c in engine.changes_since("florin", seq["florin"]) or []] == [("delete", cm)]
    engine.narrow(cm, None)
    assert cm in refs(engine, "florin")
    assert engine.is_destination(cm, "florin") and not engine.is_destination(cm, "no-such-cluster")
    assert [c.op for c in engine.changes_since("florin", seq["florin"]) or []] == ["delete", "upsert"]
