"""The web UI at scale, and its screenshots.

Benchmark (default): one hub, 1,000 SyncTargets and Locations registered through the inventory space's
Kubernetes API (no simulated clusters: the UI reads the hub only; each gets a Ready condition, capacity and a
heartbeat time, one in 50 down), space ``bench`` with a ConfigMap and a Deployment placed on all of them. In
headless Chromium (Debian's, through Playwright), signed in as the admin, each view is opened ``RUNS`` times:

* rendered: from the route change to the view marking itself drawn — its requests (the SyncTarget list and the
  object counts; the placement, its PlacementStatuses and the SyncTargets) and building the DOM;
* painted: the same, until the frame after it has been laid out and painted;
* draw: the JavaScript building the table or the SVG alone (``performance.measure`` in the views).

Writes its section of docs/benchmarks.md. With ``--screenshots``: a real run (hub, ``spacehub sim serve``,
syncer processes) whose views are saved as docs/ui-*.png for the README.

``.venv/bin/python bench/ui_bench.py [--screenshots]``
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import pct  # noqa: E402
from bench.report import write_section  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402
from tests.syncer_harness import World, namespace  # noqa: E402
from tests.ui_harness import (  # noqa: E402
    PLACEMENT,
    SCHEDULING_SPACE,
    SPACE,
    chromium,
    demo,
    open_ui,
    rendered,
    scheduling_demo,
    scheduling_world,
    sign_in,
)

HEADING = "## Web UI (`bench/ui_bench.py`)"
CLUSTERS, RUNS, AIM = 1_000, 7, 1.0
EDGE = "edge.kubestellar.io/v2alpha1"
INVENTORY = "/clusters/inventory/apis/edge.kubestellar.io/v2alpha1"
DOCS = ROOT / "docs"
# Opens a view and resolves with its timings (milliseconds).
MEASURE = """async (hash) => {
  const view = document.getElementById('view');
  delete view.dataset.rendered;
  performance.clearMeasures();
  const done = new Promise((resolve) => new MutationObserver((_, observer) => {
    if (view.dataset.rendered) { observer.disconnect(); resolve(); }
  }).observe(view, { attributes: true }));
  const start = performance.now();
  location.hash = hash;
  await done;
  const rendered = performance.now() - start;
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const draws = performance.getEntriesByType('measure').filter((m) => m.name.startsWith('draw:'))
    .map((m) => m.duration);
  return { rendered, painted: performance.now() - start, draw: Math.max(0, ...draws) };
}"""


def post(c: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post(path, content=orjson.dumps(body), headers={"Content-Type": "application/json"})
    if r.status_code not in (200, 201):
        raise SystemExit(f"POST {path}: {r.status_code} {r.text}")
    return dict(r.json())


def register_fleet(hub: Hub, n: int) -> None:
    """SyncTargets and Locations as ``spacehub cluster register`` makes them, with the status heartbeats write."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with hub.client(timeout=60) as c:
        for i in range(n):
            name = f"c{i:04d}"
            labels = {"env": "bench", "region": ("eu", "us", "ap")[i % 3], "tier": ("gold", "silver")[i % 2]}
            target = post(c, f"{INVENTORY}/synctargets", {"apiVersion": EDGE, "kind": "SyncTarget",
                                                          "metadata": {"name": name, "labels": {**labels, "id": name}}})
            post(c, f"{INVENTORY}/locations", {
                "apiVersion": EDGE, "kind": "Location", "metadata": {"name": name, "labels": labels},
                "spec": {"resource": {"group": "edge.kubestellar.io", "version": "v2alpha1", "resource": "synctargets"},
                         "instanceSelector": {"matchLabels": {"id": name}}}})
            up = i % 50 != 0
            target["status"] = {
                "lastSyncerHeartbeatTime": now, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if up else "False",
                                "reason": "SyncerHeartbeat" if up else "HeartbeatTimeout",
                                "message": "the syncer is sending heartbeats" if up else "no syncer heartbeat",
                                "lastTransitionTime": now}]}
            r = c.put(f"{INVENTORY}/synctargets/{name}/status", content=orjson.dumps(target),
                      headers={"Content-Type": "application/json"})
            if r.status_code != 200:
                raise SystemExit(f"status of {name}: {r.status_code} {r.text}")


def place_everywhere(hub: Hub) -> None:
    hub.create_space("bench")
    with hub.client(timeout=60) as c:
        base = "/clusters/bench"
        post(c, f"{base}/api/v1/namespaces", namespace("web"))
        post(c, f"{base}/api/v1/namespaces/web/configmaps",
             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "web"}})
        post(c, f"{base}/apis/apps/v1/namespaces/web/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "front", "namespace": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "front"}}, "template": {
                "metadata": {"labels": {"app": "front"}}, "spec": {"containers": [{"name": "c", "image": "httpd"}]}}}})
        post(c, f"{base}/apis/{EDGE}/edgeplacements", {
            "apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "all"},
            "spec": {"locationSelectors": [{"matchLabels": {"env": "bench"}}],
                     "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["web"]},
                                  {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["web"]}]}})

        def placed() -> bool:
            detail = c.get("/placement/v1/spaces/bench/placements/all").json()
            return len(detail.get("destinations", [])) == CLUSTERS and len(detail.get("objects", [])) == 2
        wait_for(placed, timeout=300, interval=0.5, message=f"placement 'all' reaching {CLUSTERS} clusters")


def measure(page: Any, hashes: list[str]) -> list[dict[str, float]]:
    return [page.evaluate(MEASURE, hashes[i % len(hashes)]) for i in range(RUNS)]


def benchmark() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / "home")
        hub.start()
        try:
            started = time.monotonic()
            register_fleet(hub, CLUSTERS)
            place_everywhere(hub)
            print(f"fleet of {CLUSTERS} and placement ready in {time.monotonic() - started:.0f}s")
            with chromium() as browser:
                page = open_ui(browser, hub)
                sign_in(page, hub.token)
                fleet = measure(page, ["#/fleet?run=a", "#/fleet?run=b"])
                rows = page.eval_on_selector_all("#fleet-table tbody tr", "rs => rs.length")
                picture = measure(page, ["#/space/bench/placement/all?run=a", "#/space/bench/placement/all?run=b"])
                edges = page.eval_on_selector_all("path.edge", "es => es.length")
                version = browser.version
                if page.errors:
                    raise SystemExit(f"JavaScript errors: {page.errors}")
        finally:
            hub.stop()
    if rows != CLUSTERS or edges != 2 * CLUSTERS:
        raise SystemExit(f"drew {rows} rows and {edges} edges, expected {CLUSTERS} and {2 * CLUSTERS}")
    report(fleet, picture, version)


def row(view: str, samples: list[dict[str, float]]) -> str:
    cells = []
    for key in ("rendered", "painted", "draw"):
        values = [s[key] for s in samples]
        cells.append(f"{pct(values, 50):,.0f} / {max(values):,.0f}")
    worst = max(s["painted"] for s in samples) / 1000
    return f"| {view} | {' | '.join(cells)} | {'yes' if worst <= AIM else '**no**'} |"


def report(fleet: list[dict[str, float]], picture: list[dict[str, float]], version: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        HEADING, "",
        f"Run {now} on {platform.machine()}, Python {platform.python_version()}, headless Chromium {version}: one "
        f"hub (SQLite), {CLUSTERS:,} SyncTargets with Locations (one in 50 down), space `bench` with a ConfigMap and "
        f"a Deployment placed on all of them ({2 * CLUSTERS:,} copies, all pending: no syncers). Each view opened "
        f"{RUNS} times in one signed-in page; milliseconds, median / worst. *rendered*: route change to the view "
        "drawn with its data (its requests included); *painted*: until the next frame is painted; *draw*: the "
        "JavaScript building the table or SVG alone.", "",
        "| view | rendered (ms) | painted (ms) | draw (ms) | ≤ 1 s |",
        "|---|---|---|---|---|",
        row(f"fleet: {CLUSTERS:,} clusters", fleet),
        row(f"placement picture: {CLUSTERS:,} destinations, {2 * CLUSTERS:,} edges", picture),
    ]
    for line in lines[-2:]:
        print(line)
    write_section(lines)


def screenshots() -> None:
    """docs/ui-*.png from a real run: three simulated clusters with syncers, two of them placed on."""
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp), clusters=3, hub_args=("--syncer-heartbeat-timeout", "2")).start()
        try:
            demo(world)
            world.join("hegemon", "wec3", {"env": "dev", "region": "ap"})
            world.hub.create_space("analytics")
            wait_for(lambda: ((world.hub_get(SPACE, "/apis/status.spacehub.io/v1alpha1/namespaces/shop/"
                                                   "placementstatuses/deployments.apps.storefront") or {})
                              .get("summary") or {}).get("ready") == 2, timeout=90, message="storefront ready")
            with chromium() as browser:
                page = open_ui(browser, world.hub, 1280, 760)
                page.fill("#token", world.hub.token)
                page.screenshot(path=str(DOCS / "ui-signin.png"))
                sign_in(page, world.hub.token)
                page.wait_for_function("() => [...document.querySelectorAll('#fleet-table tbody tr td:last-child')]"
                                       ".every(td => td.textContent !== '…')")
                page.screenshot(path=str(DOCS / "ui-fleet.png"))
                rendered(page, "spaces", "#/spaces")
                page.screenshot(path=str(DOCS / "ui-spaces.png"))
                rendered(page, "placement", f"#/space/{SPACE}/placement/{PLACEMENT}")
                page.click('path.edge[data-object="apps/deployments/shop/storefront"][data-cluster="guilder"]',
                           force=True)
                page.screenshot(path=str(DOCS / "ui-placement.png"))
                syncer = world.syncers["guilder"].proc
                assert syncer is not None
                world.sim.set_faults("wec2", refuse=True)
                os.kill(syncer.pid, signal.SIGSTOP)
                try:
                    page.wait_for_selector('g.cluster[data-cluster="guilder"][data-health="down"]', timeout=15_000)
                    page.click('g.cluster[data-cluster="guilder"]')
                    page.screenshot(path=str(DOCS / "ui-placement-down.png"))
                finally:
                    os.kill(syncer.pid, signal.SIGCONT)
                    world.sim.clear_faults("wec2")
                page.wait_for_selector('g.cluster[data-cluster="guilder"][data-health="ready"]', timeout=15_000)
                rendered(page, "object", f"#/space/{SPACE}/object/apps/deployments/{SPACE}/storefront")
                page.wait_for_function("() => document.querySelectorAll('#pods tbody tr').length === 4",
                                       timeout=15_000)
                page.screenshot(path=str(DOCS / "ui-object.png"), full_page=True)
                rendered(page, "explain", f"#/space/{SPACE}/explain/{PLACEMENT}")
                page.fill("#spec", "locationSelectors:\n  - matchExpressions:\n      - key: region\n"
                                   "        operator: In\n        values: [eu, ap]\n"
                                   "downsync:\n  - apiGroup: \"\"\n"
                                   "    resources: [configmaps]\n    namespaces: [shop]\n")
                page.click("#explain-button")
                page.wait_for_selector("#explain-destinations li[data-destination='hegemon']")
                page.screenshot(path=str(DOCS / "ui-explain.png"))
                if page.errors:
                    raise SystemExit(f"JavaScript errors: {page.errors}")
        finally:
            world.close()
    scheduling_screenshot()
    print(f"wrote {', '.join(sorted(p.name for p in DOCS.glob('ui-*.png')))} in {DOCS}")


def scheduling_screenshot() -> None:
    """docs/ui-scheduling.png: a scheduled placement's picture with its scores and reasons, from a real run (four
    clusters in two zones with their syncers, one tainted)."""
    with tempfile.TemporaryDirectory() as tmp:
        world = scheduling_world(Path(tmp)).start()
        try:
            scheduling_demo(world)
            with chromium() as browser:
                page = open_ui(browser, world.hub, 1280, 760)
                sign_in(page, world.hub.token)
                rendered(page, "placement", f"#/space/{SCHEDULING_SPACE}/placement/{PLACEMENT}")
                page.screenshot(path=str(DOCS / "ui-scheduling.png"), full_page=True)
                if page.errors:
                    raise SystemExit(f"JavaScript errors: {page.errors}")
        finally:
            world.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshots", action="store_true", help="save docs/ui-*.png from a real run instead")
    args = parser.parse_args()
    screenshots() if args.screenshots else benchmark()


if __name__ == "__main__":
    main()
