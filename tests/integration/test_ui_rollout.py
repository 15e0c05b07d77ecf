"""The placement picture follows a staged rollout, in headless Chromium against a real hub, ``spacehub sim serve``
clusters (pods ready one second after they start, image pulls failing where a fault says so) and real syncers.

Three clusters, c0 labelled ``ring=canary``; EdgePlacement ``web`` rolls Deployment ``app/web`` out to the canary
first, then to the rest after a Manual approval. A new image: the open page (no reload) shows stage 1 done,
WaitingForApproval and each cluster's revision (the object's page too); after ``spacehub rollout approve``,
Complete. A canary that cannot pull its image: Paused, the message naming the cluster and ImagePullBackOff.
With ``SPACEHUB_UI_SCREENSHOTS=1`` the waiting page is written to docs/ui-rollout.png. Skipped, saying why,
where no Chromium can be started.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import World, deployment, namespace, placement
from tests.ui_harness import browser_fixture, open_ui, rendered, sign_in  # noqa: F401 (fixtures)

SPACE, NAME = "common", "web"
EDGE_PLACEMENT = f"/apis/edge.kubestellar.io/v2alpha1/edgeplacements/{NAME}"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def web(image: str) -> dict[str, Any]:
    obj = deployment("web", "app", replicas=2)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return obj


def web_placement() -> dict[str, Any]:
    spread = placement(NAME, {"env": "prod"},
                       [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}])
    spread["spec"]["rollout"] = {
        "stages": [{"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}, "maxUnavailable": 1},
                   {"name": "rest", "maxUnavailable": "50%", "approval": "Manual"}],
        "progressDeadlineSeconds": 10}
    return spread


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("ui-rollout"), clusters=3, sim_args=("--ready-delay", "1")).start()
    try:
        for i in range(3):
            w.join(f"c{i}", w.sim.names[i], {"env": "prod", **({"ring": "canary"} if i == 0 else {})})
        w.hub.create_space(SPACE)
        yield w
    finally:
        w.close()


def rollout(world: World) -> dict[str, Any]:
    return ((world.hub_get(SPACE, EDGE_PLACEMENT) or {}).get("status") or {}).get("rollout") or {}


def wait_phase(world: World, phase: str, timeout: float = 60) -> dict[str, Any]:
    return wait_for(lambda: (r := rollout(world)).get("phase") == phase and r, timeout=timeout,
                    message=f"rollout {phase} (now {rollout(world).get('phase')}: {rollout(world).get('message')})")


def shown(page: Any) -> dict[str, Any]:
    """What the page's rollout panel says: phase, message, each stage's counts and each cluster's revision."""
    return page.evaluate("""() => {
      const panel = document.querySelector('#rollout .rollout');
      if (!panel) return null;
      const count = (row, c) => Number(row.querySelector(`[data-count="${c}"]`).textContent);
      return {
        phase: panel.dataset.phase, revision: Number(panel.dataset.revision),
        message: document.getElementById('rollout-message').textContent,
        stages: Object.fromEntries([...panel.querySelectorAll('tr[data-stage]')].map(r => [r.dataset.stage, {
          clusters: count(r, 'clusters'), updated: count(r, 'updated'), ready: count(r, 'ready'),
          failed: count(r, 'failed'), done: r.dataset.done === 'true'}])),
        revisions: Object.fromEntries([...panel.querySelectorAll('[data-rollout-cluster]')]
          .map(c => [c.dataset.rolloutCluster, Number(c.dataset.revision)])),
        nodes: Object.fromEntries([...document.querySelectorAll('g.cluster')]
          .map(g => [g.dataset.cluster, g.querySelector('text.revision')?.textContent ?? null])),
      };
    }""")


def wait_shown(page: Any, phase: str, timeout: float = 30_000) -> dict[str, Any]:
    page.wait_for_function("p => document.querySelector('#rollout .rollout')?.dataset.phase === p", arg=phase,
                           timeout=timeout)
    return shown(page)


def test_the_placement_picture_follows_a_staged_rollout_through_approval_and_a_failure(browser: Any,
                                                                                      world: World) -> None:
    world.apply(SPACE, namespace("app"), web("library/httpd:2.4"), web_placement())
    wait_phase(world, "Complete")
    page = open_ui(browser, world.hub, 1280, 760)
    try:
        sign_in(page, world.hub.token)
        rendered(page, "placement", f"#/space/{SPACE}/placement/{NAME}")
        first = wait_shown(page, "Complete")
        assert first["revision"] == 1
        assert first["revisions"] == {"c0": 1, "c1": 1, "c2": 1}
        page.evaluate("() => { window.stillThisPage = true; }")

        # A new image: the canary stage runs revision 2 and is done; the rest waits for approval on revision 1.
        world.apply(SPACE, web("library/httpd:2.5"))
        waiting = wait_shown(page, "WaitingForApproval")
        assert waiting["revision"] == 2
        assert "approval" in waiting["message"]
        assert waiting["stages"]["canary"] == {"clusters": 1, "updated": 1, "ready": 1, "failed": 0, "done": True}
        assert waiting["stages"]["rest"] == {"clusters": 2, "updated": 0, "ready": 0, "failed": 0, "done": False}
        assert waiting["revisions"] == {"c0": 2, "c1": 1, "c2": 1}
        assert waiting["nodes"] == {"c0": "r2", "c1": "r1", "c2": "r1"}
        assert page.get_attribute('#rollout tr[data-stage="rest"]', "class") == "current"
        # The copy's own revision, from its PlacementStatus, in the edge's details (the status may trail the
        # rollout by a report: click again until it is there).
        def detail_revision() -> str | None:
            page.click('path.edge[data-cluster="c0"]', force=True)
            return page.inner_text("[data-detail-revision]") if page.query_selector("[data-detail-revision]") else None
        wait_for(lambda: detail_revision() == "2", timeout=30, message="c0's copy at revision 2 in the details")
        if os.environ.get("SPACEHUB_UI_SCREENSHOTS") == "1":
            page.screenshot(path=str(DOCS / "ui-rollout.png"), full_page=True)

        # The object's page gives each cluster's revision of it, too.
        rendered(page, "object", f"#/space/{SPACE}/object/apps/deployments/app/web")
        page.wait_for_function("""() => [...document.querySelectorAll('#clusters tr')]
            .map(r => r.dataset.cluster + '=' + r.querySelector('[data-revision]').textContent)
            .join() === 'c0=2,c1=1,c2=1'""", timeout=30_000)
        rendered(page, "placement", f"#/space/{SPACE}/placement/{NAME}")
        wait_shown(page, "WaitingForApproval")

        approve = world.hub.spacehub("rollout", "approve", NAME, "--space", SPACE, check=False)
        assert approve.returncode == 0, approve.stderr
        done = wait_shown(page, "Complete", timeout=60_000)
        assert done["revision"] == 2
        assert done["revisions"] == {"c0": 2, "c1": 2, "c2": 2}
        assert done["nodes"] == {"c0": "r2", "c1": "r2", "c2": "r2"}
        assert all(s["done"] for s in done["stages"].values()), done["stages"]

        # The canary cannot pull the next image: the rollout pauses, naming the cluster and the reason.
        world.sim.set_faults(world.cluster_of["c0"], imagePullFailures=["*:broken"])
        world.apply(SPACE, web("library/httpd:broken"))
        paused = wait_shown(page, "Paused", timeout=60_000)
        assert "c0" in paused["message"] and "ImagePullBackOff" in paused["message"], paused["message"]
        assert paused["stages"]["canary"]["failed"] == 1
        assert page.get_attribute('[data-rollout-cluster="c0"]', "data-phase") == "Failed"
        assert paused["revisions"] == {"c0": 3, "c1": 2, "c2": 2}
        assert page.evaluate("() => window.stillThisPage === true")  # followed live, no reload
        assert page.errors == [], f"JavaScript errors in the page: {page.errors}"
    finally:
        page.context.close()

