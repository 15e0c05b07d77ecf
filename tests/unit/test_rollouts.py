"""The staged rollout state machine (``placement.rollouts``) with an injected clock, and the checks of
``spec.rollout`` (``placement.rollout_validation``)."""

from __future__ import annotations

from typing import Any

import pytest

from placement.rollout_validation import rollout_problems
from placement.rollouts import Health, Rollout, RolloutSpec, parse_rollout, stages_of

WEB = "common/deployments.apps/app/web"
CLUSTERS = {f"c{i}": ({"ring": "canary"} if i < 3 else {}) for i in range(10)}


def spec(**rollout: Any) -> RolloutSpec:
    raw = {"stages": [{"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}, "maxUnavailable": 1,
                       "soakSeconds": 30},
                      {"name": "rest", "maxUnavailable": "50%"}],
           "progressDeadlineSeconds": 300, **rollout}
    parsed = parse_rollout({"rollout": raw})
    assert parsed is not None
    return parsed


class Fleet:
    """Clusters that become Ready ``delay`` seconds after they are given the new revision, except the broken."""

    def __init__(self, rollout: Rollout, delay: float = 5, broken: frozenset[str] = frozenset()) -> None:
        self.rollout = rollout
        self.delay = delay
        self.broken = broken
        self.now = 1000.0

    def health(self, cluster: str) -> Health:
        if cluster in self.broken:
            return Health("Waiting", "pod web-1: ImagePullBackOff")
        since = self.rollout.updated.get(cluster)
        return Health("Ready") if since is not None and self.now - since >= self.delay else Health("Waiting")

    def run(self, s: RolloutSpec, until: float, step: float = 1.0) -> list[str]:
        reasons = []
        stage_of = stages_of(s, CLUSTERS)
        while self.now < until:
            reasons += [e.reason for e in self.rollout.step(s, stage_of, self.health, self.now)]
            self.now += step
        return reasons


def started(previous: int = 1, new: int = 2) -> Rollout:
    rollout = Rollout({WEB: [previous, None]}, phase="Complete")
    assert rollout.renew({WEB: new})
    return rollout


def revisions(rollout: Rollout, s: RolloutSpec) -> dict[str, int | None]:
    stage_of = stages_of(s, CLUSTERS)
    return {c: rollout.pinned(WEB, c, stage_of[c]) for c in CLUSTERS}


def test_stages_take_their_clusters_and_the_rest_goes_last() -> None:
    s = spec()
    assert stages_of(s, CLUSTERS) == {c: (0 if c in ("c0", "c1", "c2") else 1) for c in CLUSTERS}
    assert s.stages[0].budget(3) == 1 and s.stages[1].budget(7) == 3 and s.stages[1].budget(1) == 1


def test_a_new_revision_reaches_the_canaries_one_at_a_time_then_soaks_then_the_rest() -> None:
    s = spec()
    rollout = started()
    fleet = Fleet(rollout)
    fleet.run(s, 1001)
    assert set(rollout.updated) == {"c0"}  # maxUnavailable 1
    assert revisions(rollout, s) == {c: (2 if c == "c0" else 1) for c in CLUSTERS}
    fleet.run(s, 1016)
    assert set(rollout.updated) == {"c0", "c1", "c2"} and rollout.stage == 0
    fleet.run(s, 1040)  # all three ready at 1015: soaking 30 s
    assert rollout.stage == 0 and "soaking" in rollout.message
    reasons = fleet.run(s, 1200)
    assert reasons.count("StageComplete") == 2 and reasons[-1] == "RolloutComplete"
    assert rollout.phase == "Complete" and set(revisions(rollout, s).values()) == {2}


def test_a_cluster_not_ready_within_the_deadline_pauses_everything_where_it_is() -> None:
    s = spec()
    rollout = started()
    fleet = Fleet(rollout, broken=frozenset({"c1"}))
    reasons = fleet.run(s, 1400)
    assert rollout.phase == "Paused" and "RolloutFailed" in reasons and "RolloutPaused" in reasons
    assert rollout.message.startswith("cluster c1 failed: not ready within 300s: pod web-1: ImagePullBackOff")
    assert revisions(rollout, s) == {c: (2 if c in ("c0", "c1") else 1) for c in CLUSTERS}
    fleet.run(s, 2000)  # held: nothing moves until resume or undo
    assert set(rollout.updated) == {"c0", "c1"}
    rollout.resume(fleet.now)  # the failed cluster keeps the new revision with a new deadline
    assert set(rollout.updated) == {"c0", "c1"} and rollout.updated["c1"] == fleet.now
    fleet.broken = frozenset()
    fleet.run(s, 2500)
    assert rollout.phase == "Complete"


def test_rollback_returns_the_updated_clusters_to_the_previous_revision() -> None:
    s = spec(onFailure="Rollback")
    rollout = started()
    fleet = Fleet(rollout, broken=frozenset({"c1"}))
    reasons = fleet.run(s, 1400)
    assert rollout.phase == "RolledBack" and "RolledBack" in reasons
    assert set(revisions(rollout, s).values()) == {1}


def test_a_failed_copy_fails_at_once() -> None:
    s = spec()
    rollout = started()
    rollout.step(s, stages_of(s, CLUSTERS), lambda c: Health("Failed", "quota exceeded"), 1000)
    rollout.step(s, stages_of(s, CLUSTERS), lambda c: Health("Failed", "quota exceeded"), 1001)
    assert rollout.phase == "Paused" and rollout.failed == {"c0": "quota exceeded"}


def test_manual_approval_waits_and_approve_lets_the_stage_start() -> None:
    raw = {"stages": [{"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}, "maxUnavailable": 3},
                      {"name": "rest", "approval": "Manual", "maxUnavailable": "100%"}]}
    s = parse_rollout({"rollout": raw})
    assert s is not None
    rollout = started()
    fleet = Fleet(rollout)
    fleet.run(s, 1100)
    assert rollout.phase == "WaitingForApproval" and rollout.stage == 1 and len(rollout.updated) == 3
    rollout.approve()
    fleet.run(s, 1110)
    assert rollout.phase == "Complete"


def test_a_newer_revision_starts_over_from_the_first_stage_from_the_last_complete_one() -> None:
    s = spec()
    rollout = started()
    fleet = Fleet(rollout)
    fleet.run(s, 1010)
    assert rollout.renew({WEB: 3})
    assert rollout.objects[WEB] == [3, 1] and rollout.stage == 0 and not rollout.updated
    assert not rollout.renew({WEB: 3})


def test_a_user_pause_holds_and_resume_goes_on() -> None:
    s = spec()
    rollout = started()
    fleet = Fleet(rollout)
    fleet.run(s, 1002)
    rollout.pause()
    fleet.run(s, 1100)
    assert rollout.phase == "Paused" and set(rollout.updated) == {"c0"}
    rollout.resume(fleet.now)
    fleet.run(s, 1300)
    assert rollout.phase == "Complete"


def test_the_stored_status_gives_back_the_same_state() -> None:
    s = spec()
    rollout = started()
    fleet = Fleet(rollout)
    fleet.run(s, 1040)  # the canaries soaking
    stored = rollout.to_status(s, stages_of(s, CLUSTERS), {WEB: "deployments.apps app/web"})
    assert stored["revision"] == 2 and stored["stage"] == "canary" and stored["phase"] == "Progressing"
    assert stored["stages"][0] == {"name": "canary", "clusters": 3, "updated": 3, "ready": 3, "failed": 0}
    back = Rollout.from_status(stored)
    assert back is not None
    assert back.to_status(s, stages_of(s, CLUSTERS), {WEB: "deployments.apps app/web"}) == stored
    assert revisions(back, s) == revisions(rollout, s)


@pytest.mark.parametrize(("rollout", "path", "reason"), [
    ({"stages": [{"name": "a", "maxUnavailable": 0}]}, "spec.rollout.stages[0].maxUnavailable", "FieldValueInvalid"),
    ({"stages": [{"name": "a", "maxUnavailable": "101%"}]}, "spec.rollout.stages[0].maxUnavailable",
     "FieldValueInvalid"),
    ({"stages": [{"name": "a", "maxUnavailable": "0%"}]}, "spec.rollout.stages[0].maxUnavailable",
     "FieldValueInvalid"),
    ({"stages": [{"name": "a"}, {"name": "a"}]}, "spec.rollout.stages[1].name", "FieldValueDuplicate"),
    ({"stages": [{"name": "a", "clusterSelector": {"matchExpressions": [{"key": "x", "operator": "Near"}]}}]},
     "spec.rollout.stages[0].clusterSelector", "FieldValueInvalid"),
    ({"stages": [{"name": "a"}], "gate": "cluster.status.readyReplicas =="}, "spec.rollout.gate",
     "FieldValueInvalid"),
    ({"stages": [{"name": "a"}], "gate": "'text'"}, "spec.rollout.gate", "FieldValueInvalid"),
])
def test_bad_rollouts_are_refused_with_field_paths(rollout: dict[str, Any], path: str, reason: str) -> None:
    causes = rollout_problems({"rollout": rollout})
    assert [(c.field, c.type) for c in causes] == [(path, reason)]


def test_good_rollouts_pass() -> None:
    assert rollout_problems({"rollout": {"stages": [{"name": "a", "maxUnavailable": "25%"}, {"name": "b"}],
                                         "gate": "cluster.status.readyReplicas == object.spec.replicas"}}) == []


def test_an_object_new_to_the_placement_goes_everywhere_without_restarting_the_stages() -> None:
    rollout = Rollout({WEB: [1, None]}, phase="Complete")
    assert rollout.renew({WEB: 1, "common/configmaps//settings": 1})
    assert rollout.phase == "Complete" and rollout.pinned("common/configmaps//settings", "c5", 1) == 1


def test_a_status_of_an_older_generation_is_not_ready() -> None:
    """What the rollout gates on (status.readiness): the status read right after an update describes the old
    generation, as kubectl rollout status knows from observedGeneration."""
    from status.readiness import cluster_state
    from status.reports import Report

    done = {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}
    old = cluster_state("Deployment", {"replicas": 2}, Report(done, None, 2, "now", applied_revision="7"),
                        current_revision="7", stale=False)
    assert (old.phase, old.message) == ("Applied", "observedGeneration 1/2")
    new = cluster_state("Deployment", {"replicas": 2}, Report({**done, "observedGeneration": 2}, None, 2, "now",
                                                              applied_revision="7"), current_revision="7", stale=False)
    assert new.phase == "Ready"


def test_the_history_keeps_the_newest_and_the_revisions_clusters_still_run() -> None:
    import asyncio
    from types import SimpleNamespace

    from placement.model import ObjectRef
    from placement.revisions import RevisionHistory

    class Writer:
        async def write_many(self, writes: list[Any]) -> list[None]:
            return [None] * len(writes)

    history = RevisionHistory(SimpleNamespace(writer=Writer()))  # type: ignore[arg-type]
    ref = ObjectRef("common", "configmaps", "app", "settings")

    async def record_all() -> None:
        for value in ("a", "b", "b", "c", "d"):
            await history.record(ref, {"data": {"v": value}}, limit=2, in_use=frozenset({1}))

    asyncio.run(record_all())
    assert [r.number for r in history.of(ref)] == [1, 3, 4]  # "b" twice is one revision
    assert history.get(ref, 1).content == {"data": {"v": "a"}}  # type: ignore[union-attr]
