"""The hub's /metrics after a workload: kube-apiserver's request series for what kubectl did, and the placement
and sync series for the clusters, placements and streams it serves."""

from __future__ import annotations

import threading

from prometheus_client.parser import text_string_to_metric_families

from tests.harness import Hub, wait_for

PLACEMENT = """apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: metrics-prod}
spec:
  locationSelectors: [{matchLabels: {env: metrics}}]
  downsync: [{apiGroup: "", resources: [configmaps], namespaces: [default]}]
"""


def samples(hub: Hub) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with hub.client() as c:
        text = c.get("/metrics").text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= ls)


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

    def placement_counted() -> dict[tuple[str, frozenset[tuple[str, str]]], float] | None:
        found = samples(hub)
        return found if value(found, "spacehub_placements") >= 1 else None

    holder = threading.Thread(target=hold_stream)
    holder.start()
    try:
        assert synced.wait(timeout=20), "the syncer stream never sent SYNCED"
        found = wait_for(placement_counted, timeout=20, message="the placement counted")
    finally:
        done.set()
        holder.join(timeout=20)
    assert value(found, "apiserver_request_total", verb="POST", resource="configmaps", code="201") >= 1
    assert value(found, "apiserver_request_total", verb="LIST", resource="configmaps", scope="namespace",
                 code="200") >= 1
    assert value(found, "apiserver_request_total", verb="APPLY", group="edge.kubestellar.io",
                 resource="edgeplacements") >= 1
    assert value(found, "apiserver_request_duration_seconds_count", verb="LIST", resource="configmaps") >= 1
    assert value(found, "spacehub_sync_targets") >= 1
    assert value(found, "spacehub_sync_streams") >= 1
    assert value(found, "spacehub_placement_drain_duration_seconds_count") >= 1
