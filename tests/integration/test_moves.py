"""Moves are make-before-break, end to end: the real hub, ``spacehub syncer run`` processes and a ``spacehub sim
serve`` whose pods are ready 2 s after they start.

An undivided Deployment re-pointed from wec1 to wec2 — by ``spacehub.io/target-clusters``, by a Location label,
by the placement's selector, or by draining wec1 while wec2 joins — never shows 0 Ready clusters in its
PlacementStatus (sampled every 100 ms), shows wec1 as ``Leaving`` meanwhile, and leaves wec1 only once wec2 runs
it available. ``moveTimeoutSeconds`` bounds the wait (a ``MoveTimedOut`` Warning Event), ``moveStrategy:
BreakBeforeMake`` opts out, a ConfigMap (no readiness rule) moves at once. A Deployment placed on both
clusters shows their aggregated status in the space without asking (``wantMultiWECReportedState`` defaults to
true).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import ReadySampler, World, cm_path, configmap, deployment, namespace, placement

WEB = "/apis/apps/v1/namespaces/app/deployments/web"
PLACEMENT_STATUSES = "/apis/status.spacehub.io/v1alpha1/namespaces/app/placementstatuses"
DOWNSYNC = [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]},
            {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2, sim_args=("--ready-delay", "2")).start()
    w.join("wec1", "wec1", {"env": "prod", "serve": "yes"})
    w.join("wec2", "wec2", {"env": "prod"})
    w.hub.create_space("common")
    yield w
    w.close()


def available(world: World, cluster: str) -> int:
    obj = world.get(cluster, WEB) or {}
    return int((obj.get("status") or {}).get("availableReplicas") or 0)


def web(target: str | None = None) -> dict[str, Any]:
    obj = deployment("web", "app", replicas=2)
    if target is not None:
        obj["metadata"]["annotations"] = {"spacehub.io/target-clusters": target}
    return obj


def place(world: World, labels: dict[str, str], target: str | None = None, **spec: Any) -> None:
    spread = placement("web", labels, DOWNSYNC)
    spread["spec"].update(spec)
    world.apply("common", namespace("app"), web(target), configmap("settings", "app", value="x"), spread)
    wait_for(lambda: available(world, "wec1") == 2, timeout=60, message="web available on wec1")


def moved_make_before_break(world: World, sampler: ReadySampler) -> None:
    """Poll until wec1's copy is gone, asserting at every look that it is never gone before wec2 runs it."""
    def gone() -> bool:
        if world.get("wec1", WEB) is not None:
            return False
        assert available(world, "wec2") == 2, "wec1's copy went before wec2 ran the Deployment\n" + sampler.describe()
        return True
    wait_for(gone, timeout=60, message="web gone from wec1")
    wait_for(lambda: sampler.samples[-1][2] == {"wec2": "Ready"}, timeout=20, message="only wec2 in the status")


def watch_move(world: World, change: Callable[[], None]) -> ReadySampler:
    """Make ``change`` once wec1 runs web Ready, sampling its PlacementStatus; assert the move is make-before-break:
    never 0 Ready clusters, wec1 shown ``Leaving``, its copy gone only after wec2 runs it."""
    with ReadySampler(world, "common", "app", "deployments.apps.web") as sampler:
        wait_for(lambda: sampler.samples[-1][2] == {"wec1": "Ready"}, timeout=30, message="wec1 Ready in the status")
        change()
        moved_make_before_break(world, sampler)
    assert sampler.min_ready >= 1, "PlacementStatus showed 0 Ready clusters\n" + sampler.describe()
    assert sampler.saw("wec1", "Leaving"), "wec1 never shown Leaving\n" + sampler.describe()
    return sampler


def relabel(world: World, location: str, label: str) -> None:
    world.hub.kubectl("label", "locations", location, label, space="inventory")


def test_a_deployment_repointed_by_target_clusters_moves_make_before_break(world: World) -> None:
    place(world, {"env": "prod"}, target="wec1")
    wait_for(lambda: world.get("wec1", cm_path("app", "settings")) is not None, timeout=30, message="settings")

    def change() -> None:
        world.apply("common", web("wec2"))
        # The placement REST API says so too, while wec2's pods start (2 s).
        wait_for(lambda: leaving(world) == ["wec1"], timeout=10, message="wec1 leaving in the placement REST API")
    watch_move(world, change)


def test_a_location_relabelled_moves_make_before_break(world: World) -> None:
    place(world, {"serve": "yes"})

    def change() -> None:
        relabel(world, "wec2", "serve=yes")
        relabel(world, "wec1", "serve-")
        # The ConfigMap has no readiness rule: it leaves wec1 at once, while the Deployment waits.
        world.wait_absent("wec1", cm_path("app", "settings"))
    watch_move(world, change)


def test_the_placements_selector_changed_moves_make_before_break(world: World) -> None:
    place(world, {"serve": "yes"})
    elsewhere = placement("web", {}, DOWNSYNC)
    elsewhere["spec"]["locationSelectors"] = [{"matchExpressions": [{"key": "serve", "operator": "DoesNotExist"}]}]
    watch_move(world, lambda: world.apply("common", elsewhere))


def test_a_drained_cluster_keeps_an_undivided_deployment_until_the_new_cluster_runs_it(world: World) -> None:
    place(world, {"serve": "yes"})

    def change() -> None:
        relabel(world, "wec2", "serve=yes")  # the new cluster joins
        world.hub.spacehub("cluster", "drain", "wec1")  # and the old one is decommissioned at once
    watch_move(world, change)


def test_a_move_that_times_out_removes_the_old_copy_with_a_warning(world: World) -> None:
    place(world, {"env": "prod"}, target="wec1", moveTimeoutSeconds=1)
    world.sim.set_faults("wec2", imagePullFailures=["library/httpd:*"])  # wec2 never runs it
    world.apply("common", web("wec2"))
    world.wait_absent("wec1", WEB, timeout=30)
    assert available(world, "wec2") == 0

    def warned() -> bool:
        events = world.hub.kubectl("get", "events", "-n", "app", "-o", "json", space="common").stdout
        return "MoveTimedOut" in events and "removed from cluster wec1" in events
    wait_for(warned, timeout=20, message="a MoveTimedOut Warning Event on web")


def leaving(world: World) -> list[str]:
    return list(world.placement_view("common", "app", "deployments.apps", "web")["leaving"])


def stuck_move(world: World) -> None:
    """web re-pointed from wec1 to wec2, which cannot pull its image: wec1 keeps its copy, leaving."""
    place(world, {"env": "prod"}, target="wec1")
    world.sim.set_faults("wec2", imagePullFailures=["library/httpd:*"])
    world.apply("common", web("wec2"))
    wait_for(lambda: leaving(world) == ["wec1"], timeout=20, message="wec1 leaving")

    def stored_leaving() -> bool:
        stored = world.hub_get("common", f"{PLACEMENT_STATUSES}/deployments.apps.web") or {}
        return any(c.get("name") == "wec1" and c.get("phase") == "Leaving" for c in stored.get("clusters") or [])
    wait_for(stored_leaving, timeout=20, message="wec1 Leaving in the stored PlacementStatus")


def finish_move(world: World) -> None:
    """wec1 still runs web, leaving; once wec2 can pull the image and runs it, wec1's copy goes."""
    assert available(world, "wec1") == 2
    assert leaving(world) == ["wec1"]
    world.sim.clear_faults("wec2")
    wait_for(lambda: available(world, "wec2") == 2, timeout=60, message="web available on wec2")
    world.wait_absent("wec1", WEB, timeout=30)


def test_a_leaving_copy_survives_a_syncer_restart_and_goes_once_the_new_cluster_is_ready(world: World) -> None:
    stuck_move(world)
    world.syncers["wec1"].stop()
    world.syncers["wec1"].start()  # it resumes from its seq: the withheld DELETE is not sent now either
    wait_for(lambda: "in sync at seq" in world.syncers["wec1"].runs()[-1], timeout=30,
             message="wec1's restarted syncer in sync")
    finish_move(world)


def test_a_restarted_hub_takes_the_move_under_way_back_from_the_placement_status(world: World) -> None:
    stuck_move(world)
    resyncs = world.syncers["wec1"].log().count("after a full resync")
    world.hub.stop()
    world.hub.start()  # the syncers' seqs are from the earlier process: they resync in full
    wait_for(lambda: world.syncers["wec1"].log().count("after a full resync") > resyncs, timeout=60,
             message="wec1's syncer resynced with the new hub")
    finish_move(world)


def test_nothing_is_removed_from_an_unreachable_cluster_until_its_syncer_returns(world: World) -> None:
    place(world, {"env": "prod"}, target="wec1")
    world.syncers["wec1"].stop()
    world.apply("common", web("wec2"))
    wait_for(lambda: available(world, "wec2") == 2, timeout=60, message="web available on wec2")
    wait_for(lambda: leaving(world) == [], timeout=20, message="wec1's copy let go once wec2 runs it")
    assert available(world, "wec1") == 2  # its syncer is away: nothing deleted there
    world.syncers["wec1"].start()
    world.wait_absent("wec1", WEB, timeout=30)


def test_break_before_make_removes_the_old_copy_at_once(world: World) -> None:
    place(world, {"env": "prod"}, target="wec1", moveStrategy="BreakBeforeMake")
    world.apply("common", web("wec2"))
    world.wait_absent("wec1", WEB, timeout=30)
    assert available(world, "wec2") < 2  # its pods are ready 2 s after they start: it cannot run it yet


def test_a_deployment_on_two_clusters_shows_their_aggregated_status_by_default(world: World) -> None:
    place(world, {"env": "prod"})
    wait_for(lambda: available(world, "wec2") == 2, timeout=60, message="web available on wec2")

    def ready_in_space() -> bool:
        status = (world.hub_get("common", WEB) or {}).get("status") or {}
        return status.get("readyReplicas") == 2 and status.get("availableReplicas") == 2
    wait_for(ready_in_space, timeout=30, message="the space's web showing 2 ready replicas (the clusters' least)")
    shown = world.hub.kubectl("get", "deployments", "-n", "app", "web", "--no-headers", space="common").stdout
    assert shown.split()[1] == "2/2", shown

    quiet = placement("web", {"env": "prod"}, DOWNSYNC)
    quiet["spec"]["wantMultiWECReportedState"] = False
    world.apply("common", quiet)
    wait_for(lambda: not (world.hub_get("common", WEB) or {}).get("status"), timeout=30,
             message="the space's web without status once the placement says false")
