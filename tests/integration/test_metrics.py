"""The hub's /metrics after a workload: kube-apiserver's request series for what kubectl did, and the placement
and sync series for the clusters, placements and streams it serves; with a real syncer, its lag and apply
errors, and the Grafana dashboard's every series on a real hub or syncer."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import Hub, Samples, free_port, metric_samples, metric_value, wait_for
from tests.syncer_harness import World, cm_path, configmap, namespace, placement

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "spacehub-dashboard.json"
SERIES = re.compile(r"\b(?:apiserver|spacehub)_[a-z0-9_]+\b")
SAMPLE_SUFFIX = re.compile(r"_(?:bucket|sum|count|gsum|gcount)$")  # a histogram's or summary's samples

PLACEMENT = """apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: metrics-prod}
spec:
  locationSelectors: [{matchLabels: {env: metrics}}]
  downsync: [{apiGroup: "", resources: [configmaps], namespaces: [default]}]
"""


def test_request_placement_and_sync_series_follow_a_workload(hub_factory: Callable[..., Hub]) -> None:
    # A hub of its own: every count is exact, whatever other tests did before.
    hub = hub_factory()
    space = "metrics"
    hub.create_space(space)
    hub.kubectl("create", "configmap", "settings", "--from-literal=mode=fast", space=space)
    hub.kubectl("get", "configmaps", space=space)
    hub.kubectl("apply", "--server-side", "-f", "-", space=space, input=PLACEMENT)
    with hub.client() as c:
        r = c.post("/placement/v1/clusters", json={"name": "metrics-edge", "labels": {"env": "metrics"}})
        assert r.status_code == 201, r.text
    synced, done = threading.Event(), threading.Event()

    def hold_stream() -> None:
        with hub.client(timeout=30) as c, c.stream("GET", "/syncer/v1/targets/metrics-edge/stream") as r:
            for line in r.iter_lines():
                if '"SYNCED"' in line:
                    synced.set()
                    done.wait(timeout=30)
                    return

    def placement_counted() -> Samples | None:
        found = metric_samples(hub)
        return found if metric_value(found, "spacehub_placements") >= 1 else None

    holder = threading.Thread(target=hold_stream)
    holder.start()
    try:
        assert synced.wait(timeout=20), "the syncer stream never sent SYNCED"
        found = wait_for(placement_counted, timeout=20, message="the placement counted")
    finally:
        done.set()
        holder.join(timeout=20)
    assert metric_value(found, "apiserver_request_total", verb="POST", resource="configmaps", code="201") == 1
    assert metric_value(found, "apiserver_request_total", verb="LIST", resource="configmaps", scope="namespace",
                        code="200") == 1
    assert metric_value(found, "apiserver_request_total", verb="APPLY", group="edge.kubestellar.io",
                        resource="edgeplacements") == 1
    assert metric_value(found, "apiserver_request_duration_seconds_count", verb="LIST", resource="configmaps") == 1
    assert metric_value(found, "spacehub_placements") == 1
    assert metric_value(found, "spacehub_sync_targets") == 1
    assert metric_value(found, "spacehub_sync_streams") == 1
    assert metric_value(found, "spacehub_placement_drain_duration_seconds_count") >= 1  # one per engine pass


def dashboard_panels() -> Iterator[dict[str, Any]]:
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        yield panel
        yield from panel.get("panels", ())


def dashboard_series() -> set[str]:
    """The series names the dashboard's PromQL expressions read."""
    return {name for panel in dashboard_panels() for target in panel.get("targets", ())
            for name in SERIES.findall(target["expr"])}


def test_the_dashboard_reads_a_chosen_prometheus_data_source() -> None:
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    assert {"name": "datasource", "type": "datasource", "query": "prometheus"}.items() <= variables[0].items()
    for panel in dashboard_panels():
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert panel["targets"] and all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=1).start()
    yield w
    w.close()


def syncer_samples(base: str) -> Samples:
    text = httpx.get(f"{base}/metrics", timeout=5).text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_watches_storage_placement_and_sync_series_and_the_lag_of_a_caught_up_syncer(world: World) -> None:
    port = free_port()
    world.join("observed", "wec1", {"env": "observed"}, extra_args=["--metrics-listen", f"127.0.0.1:{port}"])
    syncer = f"http://127.0.0.1:{port}"
    world.hub.create_space("observed")
    world.apply("observed", namespace("app"), configmap("first", "app", v="1"), configmap("second", "app", v="1"),
                placement("p", {"env": "observed"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                      "namespaces": ["app"]}]))
    world.wait_present("observed", cm_path("app", "second"))
    # An apply the cluster refuses: the syncer counts it, the hub hears of it in the syncer's report.
    world.sim.set_faults("wec1", failWrites=True)
    world.apply("observed", configmap("refused", "app", v="1"))
    wait_for(lambda: metric_value(metric_samples(world.hub), "spacehub_sync_objects_failing") >= 1, timeout=30,
             message="the hub counting the object the cluster refused")
    world.sim.clear_faults("wec1")
    world.wait_present("observed", cm_path("app", "refused"), timeout=60)

    watching, done = threading.Event(), threading.Event()

    def watch() -> None:
        with world.hub.client(timeout=30) as c, c.stream(
                "GET", "/clusters/observed/api/v1/namespaces/app/configmaps?watch=true") as r:
            assert r.status_code == 200
            watching.set()
            done.wait(timeout=60)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert watching.wait(timeout=20), "the watch never started"

        def settled() -> Samples | None:
            found = metric_samples(world.hub)
            lag = [metric_value(found, f"spacehub_sync_lag_{unit}", cluster="observed") for unit in
                   ("sequences", "seconds")]
            present = ("spacehub_sync_lag_sequences", frozenset({("cluster", "observed")})) in found
            return found if present and lag == [0, 0] and \
                metric_value(found, "spacehub_sync_objects_failing") == 0 else None

        found = wait_for(settled, timeout=30, message="the syncer caught up and its error cleared")
    finally:
        done.set()
        watcher.join(timeout=20)
    assert metric_value(found, "apiserver_longrunning_requests", verb="WATCH", resource="configmaps",
                        scope="namespace") == 1
    assert metric_value(found, "apiserver_storage_objects", resource="configmaps") >= 3
    assert metric_value(found, "apiserver_storage_objects", resource="edgeplacements.edge.kubestellar.io") >= 1
    assert metric_value(found, "spacehub_placement_destinations") >= 1
    assert metric_value(found, "spacehub_desired_objects_gsum") >= 4  # the namespace and three ConfigMaps
    assert metric_value(found, "spacehub_desired_objects_bucket", le="+Inf") >= 1
    assert metric_value(found, "spacehub_placement_write_duration_seconds_count") >= 1
    assert metric_value(found, "spacehub_sync_frames_sent_total") >= 5  # RESET, SYNCED, UPSYNC and the objects
    assert metric_value(syncer_samples(syncer), "spacehub_syncer_apply_errors_total", target="observed") >= 1
    wait_for(lambda: metric_value(metric_samples(world.hub), "apiserver_longrunning_requests", verb="WATCH") == 0,
             timeout=20, message="the ended watch no longer counted")

    exposed = {name for name, _ in found} | {name for name, _ in syncer_samples(syncer)}
    assert dashboard_series() - exposed == set()
    # The README's list names every series of the hub (prometheus_client's own _created ones aside).
    named = set(re.findall(r"`([a-z_]+)`", (REPO / "README.md").read_text(encoding="utf-8")))
    assert {SAMPLE_SUFFIX.sub("", name) for name, _ in found if not name.endswith("_created")} - named == set()
