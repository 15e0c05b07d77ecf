"""Staged, health-gated rollouts end to end: the real hub, ``spacehub syncer run`` processes and ``spacehub sim
serve`` clusters (pods ready one second after they start, image pulls failing where a fault says so).

Ten clusters, three labelled ``ring=canary``: a new image reaches the canaries first and waits for approval of
the rest; a canary that cannot pull its image fails the rollout within progressDeadlineSeconds while the seven
others keep the old image; ``undo`` restores the canaries and the space's object; after the fault is cleared a
new change completes every stage; a hub restart mid-rollout resumes at the same stage and revision. With
``onFailure: Rollback`` the updated clusters return to the previous image. Bad rollout specs are refused.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import wait_for
from tests.syncer_harness import World, deployment, namespace, placement

WEB = "/apis/apps/v1/namespaces/app/deployments/web"
PLACEMENT = "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/web"
CANARIES = ("c0", "c1", "c2")
REST = tuple(f"c{i}" for i in range(3, 10))
BROKEN = "library/httpd:broken"


def web_placement(**rollout: Any) -> dict[str, Any]:
    spread = placement("web", {"env": "prod"}, [
        {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}])
    spread["spec"]["rollout"] = {
        "stages": [{"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}, "maxUnavailable": 3},
                   {"name": "rest", "maxUnavailable": "50%", "approval": "Manual"}],
        "progressDeadlineSeconds": 20, "gate": "cluster.status.readyReplicas == object.spec.replicas", **rollout}
    return spread


def web(image: str) -> dict[str, Any]:
    obj = deployment("web", "app", replicas=2)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return obj


def start_fleet(tmp_path: Path, clusters: int, canaries: int) -> World:
    w = World(tmp_path, clusters=clusters, sim_args=("--ready-delay", "1")).start()
    for i in range(clusters):
        labels = {"env": "prod", **({"ring": "canary"} if i < canaries else {})}
        w.join(f"c{i}", w.sim.names[i], labels)
    w.hub.create_space("common")
    return w


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[World]:
    w = start_fleet(tmp_path, 10, 3)
    yield w
    w.close()


def image(world: World, cluster: str) -> str | None:
    obj = world.get(cluster, WEB)
    return None if obj is None else obj["spec"]["template"]["spec"]["containers"][0]["image"]


def running(world: World, cluster: str, wanted: str) -> bool:
    """The cluster runs ``wanted`` with every replica updated and available (what kubectl rollout status says)."""
    obj = world.get(cluster, WEB)
    if obj is None or obj["spec"]["template"]["spec"]["containers"][0]["image"] != wanted:
        return False
    status = obj.get("status") or {}
    return status.get("observedGeneration") == obj["metadata"]["generation"] and \
        status.get("updatedReplicas") == 2 and status.get("availableReplicas") == 2


def rollout(world: World) -> dict[str, Any]:
    return ((world.hub_get("common", PLACEMENT) or {}).get("status") or {}).get("rollout") or {}


def wait_phase(world: World, phase: str, timeout: float = 60) -> dict[str, Any]:
    return wait_for(lambda: (r := rollout(world)).get("phase") == phase and r, timeout=timeout,
                    message=f"rollout {phase} (now {rollout(world).get('phase')}: {rollout(world).get('message')})")


def spacehub(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return world.hub.spacehub("rollout", *args, "--space", "common", check=False)


def set_image(world: World, wanted: str) -> None:
    world.apply("common", web(wanted))


def test_a_staged_rollout_goes_canaries_first_fails_on_a_bad_image_undoes_and_survives_a_restart(
        fleet: World) -> None:
    world = fleet
    world.apply("common", namespace("app"), web("library/httpd:2.4"), web_placement())
    wait_for(lambda: all(running(world, c, "library/httpd:2.4") for c in CANARIES + REST), timeout=90,
             message="revision 1 everywhere at once")
    assert wait_phase(world, "Complete")["revision"] == 1
    with world.hub.client() as c:
        desired = c.get("/placement/v1/clusters/c5/desired").json()
    entry = next(i for i in desired["items"] if i["name"] == "web")
    assert entry["revision"] == 1 and entry["contentRevision"]

    # A new image: the canaries first; the rest waits for approval and keeps the old image.
    set_image(world, "library/httpd:2.5")
    wait_for(lambda: all(running(world, c, "library/httpd:2.5") for c in CANARIES), timeout=60,
             message="the canaries run 2.5")
    state = wait_phase(world, "WaitingForApproval")
    assert state["revision"] == 2 and state["stage"] == "rest"
    assert [image(world, c) for c in REST] == ["library/httpd:2.4"] * 7
    with world.hub.client() as c:
        entries = {t: next(i for i in c.get(f"/placement/v1/clusters/{t}/desired").json()["items"]
                           if i["name"] == "web")["revision"] for t in ("c0", "c5")}
    assert entries == {"c0": 2, "c5": 1}

    def status_revisions() -> dict[str, int]:
        summary = world.placement_view("common", "app", "deployments.apps", "web").get("summary") or {}
        return {c["name"]: c.get("revision") for c in summary.get("clusters") or [] if c["name"] in ("c0", "c5")}
    wait_for(lambda: status_revisions() == {"c0": 2, "c5": 1}, timeout=20,
             message="PlacementStatus giving each cluster's revision")
    assert spacehub(world, "status", "web").returncode == 2
    assert spacehub(world, "approve", "web").returncode == 0
    done = spacehub(world, "status", "web", "--watch", "--timeout", "90")
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: all(running(world, c, "library/httpd:2.5") for c in CANARIES + REST), timeout=30,
             message="2.5 everywhere")

    # A canary that cannot pull the new image fails the rollout within the deadline; the rest keep 2.5.
    world.sim.set_faults(world.cluster_of["c1"], imagePullFailures=["*:broken"])
    set_image(world, BROKEN)
    state = wait_phase(world, "Paused", timeout=60)
    assert "c1" in state["message"] and "ImagePullBackOff" in state["message"], state["message"]
    failed = spacehub(world, "status", "web")
    assert failed.returncode == 1 and "c1" in failed.stdout and "ImagePullBackOff" in failed.stdout, failed.stdout
    assert [image(world, c) for c in REST] == ["library/httpd:2.5"] * 7
    assert image(world, "c1") == BROKEN
    conditions = {c["type"]: c for c in (world.hub_get("common", PLACEMENT) or {})["status"]["conditions"]}
    assert conditions["RolloutFailed"]["reason"] == "ClusterFailed"

    # undo: the space's object gets 2.5 back (revision 4), the canaries run it again.
    assert spacehub(world, "undo", "web").returncode == 0
    assert (world.hub_get("common", WEB) or {})["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "library/httpd:2.5"
    wait_for(lambda: all(running(world, c, "library/httpd:2.5") for c in CANARIES), timeout=60,
             message="the canaries back on 2.5")
    history = spacehub(world, "history", "web")
    assert history.returncode == 0 and BROKEN in history.stdout
    state = wait_phase(world, "WaitingForApproval")
    assert state["revision"] == 4
    assert spacehub(world, "approve", "web").returncode == 0
    wait_phase(world, "Complete")

    # The fault cleared, a new change completes every stage.
    world.sim.clear_faults(world.cluster_of["c1"])
    set_image(world, "library/httpd:2.6")
    wait_phase(world, "WaitingForApproval")
    assert spacehub(world, "approve", "web").returncode == 0
    done = spacehub(world, "status", "web", "--watch", "--timeout", "90")
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: all(running(world, c, "library/httpd:2.6") for c in CANARIES + REST), timeout=60,
             message="2.6 everywhere")

    # A hub restart mid-rollout resumes at the same stage and revision.
    set_image(world, "library/httpd:2.7")
    before = wait_phase(world, "WaitingForApproval")
    world.hub.stop()
    world.hub.start()
    after = wait_phase(world, "WaitingForApproval")
    assert (after["revision"], after["stage"]) == (before["revision"], before["stage"]) == (6, "rest")
    assert [image(world, c) for c in REST] == ["library/httpd:2.6"] * 7
    assert all(running(world, c, "library/httpd:2.7") for c in CANARIES)
    assert spacehub(world, "approve", "web").returncode == 0
    wait_phase(world, "Complete", timeout=90)
    wait_for(lambda: all(running(world, c, "library/httpd:2.7") for c in REST), timeout=60,
             message="2.7 everywhere after the restart")


def test_rollback_returns_the_updated_clusters_to_the_previous_revision(tmp_path: Path) -> None:
    world = start_fleet(tmp_path, 3, 2)
    try:
        world.apply("common", namespace("app"), web("library/httpd:2.4"),
                    web_placement(onFailure="Rollback", progressDeadlineSeconds=10))
        wait_for(lambda: all(running(world, c, "library/httpd:2.4") for c in ("c0", "c1", "c2")), timeout=90,
                 message="revision 1 everywhere")
        world.sim.set_faults(world.cluster_of["c1"], imagePullFailures=["*:broken"])
        set_image(world, BROKEN)
        wait_for(lambda: image(world, "c0") == BROKEN, timeout=30, message="canary c0 updated")
        state = wait_phase(world, "RolledBack", timeout=60)
        assert "c1" in state["message"]
        wait_for(lambda: all(running(world, c, "library/httpd:2.4") for c in ("c0", "c1")), timeout=60,
                 message="the canaries back on 2.4")
        assert image(world, "c2") == "library/httpd:2.4"
        assert spacehub(world, "status", "web").returncode == 1
        # Nothing waits for approval: approving is a conflict.
        approve = spacehub(world, "approve", "web")
        assert approve.returncode == 1 and "not WaitingForApproval" in approve.stderr, approve.stderr
        undo = spacehub(world, "undo", "web", "--to-revision", "99")
        assert undo.returncode == 1 and "99" in undo.stderr and "not found" in undo.stderr, undo.stderr
        # The story is told in Events on the placement (and on the object).
        with world.hub.client() as c:
            events = c.get("/clusters/common/api/v1/namespaces/default/events").json()["items"]
        reasons = {e["reason"] for e in events if e["involvedObject"].get("kind") == "EdgePlacement"}
        assert {"RolloutStarted", "RolloutFailed", "RolledBack"} <= reasons, reasons
        with world.hub.client() as c:
            events = c.get("/clusters/common/api/v1/namespaces/app/events").json()["items"]
        uid = (world.hub_get("common", WEB) or {})["metadata"]["uid"]
        assert "RolledBack" in {e["reason"] for e in events if e["involvedObject"].get("uid") == uid}
    finally:
        world.close()


def test_a_gate_that_stays_false_fails_the_rollout_at_the_deadline(tmp_path: Path) -> None:
    world = start_fleet(tmp_path, 1, 1)
    try:
        gated = web_placement(gate="cluster.status.readyReplicas >= 3", progressDeadlineSeconds=5)
        world.apply("common", namespace("app"), web("library/httpd:2.4"), gated)
        wait_for(lambda: running(world, "c0", "library/httpd:2.4"), timeout=60, message="revision 1 on c0")
        set_image(world, "library/httpd:2.5")
        state = wait_phase(world, "Paused", timeout=60)
        assert "gate 'cluster.status.readyReplicas >= 3' is false" in state["message"], state["message"]
        assert running(world, "c0", "library/httpd:2.5")  # Ready by its kind: only the gate held it back
        # The object deleted: its revisions go with it, and the next object of that name starts from 1.
        world.hub.kubectl("delete", "deployment", "web", "-n", "app", space="common")
        history = "/placement/v1/spaces/common/placements/web/history"
        with world.hub.client() as c:
            wait_for(lambda: c.get(history).json()["items"] == [], message="the deleted object out of the history")
            set_image(world, "library/httpd:2.6")
            wait_for(lambda: [i["revision"] for i in c.get(history).json()["items"]] == [1],
                     message="the new object's history starting at 1")
    finally:
        world.close()


BAD_ROLLOUTS = [
    ({"stages": [{"name": "a", "maxUnavailable": 0}]}, "spec.rollout.stages[0].maxUnavailable"),
    ({"stages": [{"name": "a", "maxUnavailable": "150%"}]}, "spec.rollout.stages[0].maxUnavailable"),
    ({"stages": [{"name": "a"}, {"name": "a"}]}, "spec.rollout.stages[1].name"),
    ({"stages": [{"name": "a", "clusterSelector": {"matchExpressions": [{"key": "x", "operator": "Near"}]}}]},
     "spec.rollout.stages[0].clusterSelector"),
    ({"stages": [{"name": "a"}], "gate": "cluster.status.readyReplicas =="}, "spec.rollout.gate"),
    ({"stages": [{"name": "a"}], "onFailure": "Retry"}, "spec.rollout.onFailure"),
]


def test_malformed_rollout_specs_are_refused_with_field_paths(tmp_path: Path) -> None:
    world = World(tmp_path, clusters=1)
    world.hub.start()
    try:
        world.hub.create_space("common")
        placements = "/clusters/common/apis/edge.kubestellar.io/v2alpha1/edgeplacements"
        with world.hub.client() as c:
            for rollout, field in BAD_ROLLOUTS:
                bad = placement("web", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"]}])
                bad["spec"]["rollout"] = rollout
                r = c.post(placements + "?fieldValidation=Strict", json=bad)
                assert r.status_code == 422, r.text
                causes = r.json()["details"]["causes"]
                assert field in [cause.get("field") for cause in causes], causes
            # An unknown field is refused as for any CRD under Strict (kubectl's default): 400, naming it.
            bad["spec"]["rollout"] = {"stages": [{"name": "a", "speed": "fast"}]}
            r = c.post(placements + "?fieldValidation=Strict", json=bad)
            assert r.status_code == 400 and 'unknown field "spec.rollout.stages[0].speed"' in r.json()["message"]
            assert c.get(placements + "/web").status_code == 404  # nothing was stored
            # A good one is stored; an edit breaking it is refused and leaves it unchanged.
            bad["spec"]["rollout"] = {"stages": [{"name": "a", "maxUnavailable": "25%"}]}
            assert c.post(placements, json=bad).status_code == 201
            stored = c.get(placements + "/web").json()
            stored["spec"]["rollout"]["stages"][0]["maxUnavailable"] = 0
            assert c.put(placements + "/web", json=stored).status_code == 422
            assert c.get(placements + "/web").json()["spec"]["rollout"]["stages"][0]["maxUnavailable"] == "25%"
            # No rollout has run: its controls say so.
            r = c.post("/placement/v1/spaces/common/placements/web:approve")
            assert r.status_code == 409 and r.json()["reason"] == "Conflict", r.text
            r = c.post("/placement/v1/spaces/common/placements/nothing:pause")
            assert r.status_code == 404, r.text
            plain = placement("plain", {"env": "prod"}, [{"apiGroup": "apps", "resources": ["deployments"]}])
            assert c.post(placements, json=plain).status_code == 201
            r = wait_for(lambda: (r := c.post("/placement/v1/spaces/common/placements/plain:pause")).status_code
                         != 404 and r, message="the hub knowing placement plain")
            assert r.status_code == 409 and "no spec.rollout" in r.json()["message"], r.text
    finally:
        world.hub.stop()
