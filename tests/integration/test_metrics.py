"""The hub's /metrics after a workload: kube-apiserver's request series for what kubectl did, and the placement
and sync series for the clusters, placements and streams it serves."""

from __future__ import annotations

import threading

from tests.harness import Hub, Samples, metric_samples, metric_value, wait_for

PLACEMENT = """apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: metrics-prod}
spec:
  locationSelectors: [{matchLabels: {env: metrics}}]
  downsync: [{apiGroup: "", resources: [configmaps], namespaces: [default]}]
"""


def test_request_placement_and_sync_series_follow_a_workload(hub: Hub, space: str) -> None:
    hub.kubectl("create", "configmap", "settings", "--from-literal=mode=fast", space=space)
    hub.kubectl("get", "configmaps", space=space)
    hub.kubectl("apply", "--server-side", "-f", "-", space=space, input=PLACEMENT)
    with hub.client() as c:
        r = c.post("/placement/v1/clusters", json={"name": "metrics-edge", "labels": {"env": "metrics"}})
        assert r.status_code in (201, 409), r.text
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
    assert metric_value(found, "apiserver_request_total", verb="POST", resource="configmaps", code="201") >= 1
    assert metric_value(found, "apiserver_request_total", verb="LIST", resource="configmaps", scope="namespace",
                 code="200") >= 1
    assert metric_value(found, "apiserver_request_total", verb="APPLY", group="edge.kubestellar.io",
                 resource="edgeplacements") >= 1
    assert metric_value(found, "apiserver_request_duration_seconds_count", verb="LIST", resource="configmaps") >= 1
    assert metric_value(found, "spacehub_sync_targets") >= 1
    assert metric_value(found, "spacehub_sync_streams") >= 1
    assert metric_value(found, "spacehub_placement_drain_duration_seconds_count") >= 1
