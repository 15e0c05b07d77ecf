"""status.aggregate: one object's status from the statuses its clusters report (KubeStellar's multi-WEC rules)."""

from __future__ import annotations

import itertools
from typing import Any

from status.aggregate import aggregate


def deployment_available() -> dict[str, Any]:
    return {
        "observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "True", "lastUpdateTime": "2025-03-01T10:00:05Z",
             "lastTransitionTime": "2025-03-01T10:00:05Z", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": "2025-03-02T08:00:00Z",
             "lastTransitionTime": "2025-03-01T10:00:00Z", "reason": "NewReplicaSetAvailable",
             "message": 'ReplicaSet "web-5d4f8c7b9" has successfully progressed.'},
        ],
    }


def deployment_rolling() -> dict[str, Any]:
    """A rolling update with a surge pod: four pods exist for three wanted."""
    return {
        "observedGeneration": 5, "replicas": 4, "updatedReplicas": 2, "readyReplicas": 3, "availableReplicas": 3,
        "unavailableReplicas": 1,
        "conditions": [
            {"type": "Available", "status": "True", "lastUpdateTime": "2025-03-01T11:00:00Z",
             "lastTransitionTime": "2025-03-01T11:00:00Z", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": "2025-03-02T09:00:00Z",
             "lastTransitionTime": "2025-03-02T09:00:00Z", "reason": "ReplicaSetUpdated",
             "message": 'ReplicaSet "web-7c6b5f9d8" is progressing.'},
        ],
    }


def deployment_unavailable() -> dict[str, Any]:
    """Two pods cannot start; the controller omits zero counts, so readyReplicas is absent."""
    return {
        "observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "unavailableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "False", "lastUpdateTime": "2025-03-02T07:00:00Z",
             "lastTransitionTime": "2025-03-02T07:00:00Z", "reason": "MinimumReplicasUnavailable",
             "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": "2025-03-02T07:00:00Z",
             "lastTransitionTime": "2025-03-01T10:00:00Z", "reason": "NewReplicaSetAvailable",
             "message": 'ReplicaSet "web-5d4f8c7b9" has successfully progressed.'},
        ],
    }


def test_no_status_at_all_is_none() -> None:
    assert aggregate([]) is None
    assert aggregate([None, None]) is None


def test_one_cluster_is_a_copy_without_its_generation() -> None:
    status = deployment_available()
    result = aggregate([None, status, None])
    expected = deployment_available()
    del expected["observedGeneration"]
    assert result == expected
    assert result is not None
    result["conditions"][0]["status"] = "False"
    assert status["conditions"][0]["status"] == "True"  # a copy, not the cluster's own


def test_deployment_false_on_one_cluster_and_true_on_two() -> None:
    result = aggregate([deployment_available(), deployment_rolling(), deployment_unavailable()])
    assert result == {
        "availableReplicas": 0,      # absent (zero) on the unavailable cluster
        "conditions": [
            {"lastTransitionTime": "2025-03-02T07:00:00Z", "lastUpdateTime": "2025-03-02T07:00:00Z",
             "message": "Deployment does not have minimum availability.", "reason": "MinimumReplicasUnavailable",
             "status": "False", "type": "Available"},
            # All True: the latest transition among them.
            {"lastTransitionTime": "2025-03-02T09:00:00Z", "lastUpdateTime": "2025-03-02T09:00:00Z",
             "message": 'ReplicaSet "web-7c6b5f9d8" is progressing.', "reason": "ReplicaSetUpdated",
             "status": "True", "type": "Progressing"},
        ],
        "readyReplicas": 0,
        "replicas": 4,               # the most pods that exist anywhere, the surge included
        "unavailableReplicas": 3,
        "updatedReplicas": 2,
    }
    assert list(result) == sorted(result)


def test_conditions_true_and_unknown_are_unknown_with_the_unknown_reason() -> None:
    available = deployment_available()
    unknown = deployment_available()
    unknown["conditions"][0].update(status="Unknown", reason="NodeUnreachable", message="lost contact",
                                    lastTransitionTime="2025-02-01T00:00:00Z")
    result = aggregate([available, unknown])
    assert result is not None
    cond = result["conditions"][0]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == (
        "Unknown", "NodeUnreachable", "2025-02-01T00:00:00Z")


def test_the_latest_transition_is_compared_as_time_not_text() -> None:
    early, late = deployment_available(), deployment_available()
    early["conditions"][0].update(lastTransitionTime="2025-03-01T10:00:05Z", reason="Early")
    late["conditions"][0].update(lastTransitionTime="2025-03-01T10:00:05.5Z", reason="Late")
    result = aggregate([early, late])
    assert result is not None
    assert result["conditions"][0]["reason"] == "Late"


def test_replicasets_take_the_least_ready_and_a_replica_failure() -> None:
    healthy = {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
               "observedGeneration": 1}
    quota = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
             "observedGeneration": 1,
             "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "lastTransitionTime": "2025-03-01T12:00:00Z",
                             "message": 'pods "web-5d4f8c7b9-x" is forbidden: exceeded quota: pods'}]}
    result = aggregate([healthy, quota])
    assert result == {
        "availableReplicas": 2,
        # The healthy cluster has no ReplicaFailure condition: nobody knows it everywhere.
        "conditions": [{"lastTransitionTime": "2025-03-01T12:00:00Z",
                        "message": "1 of 2 clusters report this condition", "reason": "NotReportedByAllClusters",
                        "status": "Unknown", "type": "ReplicaFailure"}],
        "fullyLabeledReplicas": 2, "readyReplicas": 2, "replicas": 3,
    }


def daemonsets() -> list[dict[str, Any]]:
    return [
        {"currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberAvailable": 3, "numberMisscheduled": 0,
         "numberReady": 3, "observedGeneration": 2, "updatedNumberScheduled": 3},
        {"currentNumberScheduled": 5, "desiredNumberScheduled": 5, "numberAvailable": 4, "numberMisscheduled": 1,
         "numberReady": 4, "numberUnavailable": 1, "observedGeneration": 7, "updatedNumberScheduled": 5},
    ]


def test_daemonsets_min_ready_and_max_unavailable() -> None:
    assert aggregate(daemonsets()) == {
        "currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberAvailable": 3, "numberMisscheduled": 1,
        "numberReady": 3, "numberUnavailable": 1, "updatedNumberScheduled": 3,
    }


def test_divided_sums_every_count() -> None:
    assert aggregate(daemonsets(), divided=True) == {
        "currentNumberScheduled": 8, "desiredNumberScheduled": 8, "numberAvailable": 7, "numberMisscheduled": 1,
        "numberReady": 7, "numberUnavailable": 1, "updatedNumberScheduled": 8,
    }
    split = aggregate([deployment_available(), deployment_unavailable()], divided=True)
    assert split is not None
    assert {k: v for k, v in split.items() if k != "conditions"} == {
        "availableReplicas": 3, "readyReplicas": 3, "replicas": 6, "unavailableReplicas": 3, "updatedReplicas": 6}
    assert [c["status"] for c in split["conditions"]] == ["False", "True"]


def test_statefulsets_keep_equal_strings_and_drop_the_others() -> None:
    done = {"replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3, "availableReplicas": 3,
            "currentRevision": "web-7d9f6c5b4", "updateRevision": "web-7d9f6c5b4", "collisionCount": 0,
            "observedGeneration": 2}
    rolling = {"replicas": 3, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 1, "availableReplicas": 2,
               "currentRevision": "web-7d9f6c5b4", "updateRevision": "web-8a1b2c3d4", "collisionCount": 0,
               "observedGeneration": 3}
    assert aggregate([done, rolling]) == {
        "availableReplicas": 2, "collisionCount": 0, "currentReplicas": 2, "currentRevision": "web-7d9f6c5b4",
        "readyReplicas": 2, "replicas": 3, "updatedReplicas": 1,
    }


def test_jobs_running_and_complete() -> None:
    running = {"active": 1, "ready": 1, "terminating": 0, "startTime": "2025-03-01T10:00:00Z",
               "uncountedTerminatedPods": {}}
    complete = {"succeeded": 1, "ready": 0, "terminating": 0, "startTime": "2025-03-01T10:00:02Z",
                "completionTime": "2025-03-01T10:01:00Z", "uncountedTerminatedPods": {},
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": "2025-03-01T10:01:00Z", "lastTransitionTime": "2025-03-01T10:01:00Z"},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": "2025-03-01T10:01:00Z", "lastTransitionTime": "2025-03-01T10:01:00Z"}]}
    failed = {"failed": 2, "ready": 0, "terminating": 0, "startTime": "2025-03-01T10:00:01Z",
              "uncountedTerminatedPods": {}}
    result = aggregate([running, complete, failed])
    assert result is not None
    assert {k: v for k, v in result.items() if k != "conditions"} == {
        "active": 0, "failed": 2, "ready": 0, "succeeded": 0, "terminating": 0, "uncountedTerminatedPods": {}}
    assert [(c["type"], c["status"], c["reason"]) for c in result["conditions"]] == [
        ("SuccessCriteriaMet", "Unknown", "NotReportedByAllClusters"),
        ("Complete", "Unknown", "NotReportedByAllClusters")]


def database(phase: str, host: str, ready: int, shards: int, healthy: bool, **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "healthy": healthy, "endpoints": [{"host": host, "port": 5432}],
            "ports": [5432, 9187], "summary": {"ready": ready, "total": 2, "engine": "postgres"},
            "shards": [{"name": f"s{i}", "ready": True} for i in range(shards)], "score": 0.5 + ready / 10,
            "conditions": [{"type": "Ready", "status": "True" if healthy else "False", "reason": phase,
                            "lastTransitionTime": f"2025-03-0{ready + 1}T00:00:00Z"}], **extra}


def test_custom_resources_keep_what_agrees_in_shape() -> None:
    eu = database("Ready", "db.eu.example.com", 2, 3, True, region={"name": "eu"})
    us = database("Degraded", "db.us.example.com", 1, 3, False, region={"name": "us", "zone": "us-east-1"})
    assert aggregate([eu, us]) == {
        "conditions": [{"lastTransitionTime": "2025-03-02T00:00:00Z", "reason": "Degraded", "status": "False",
                        "type": "Ready"}],
        # endpoints: same shape, but the items differ in host: no such item exists, so the list goes.
        "healthy": False,                       # booleans AND
        "ports": [5432, 9187],                  # equal lists stay
        # phase: strings that differ are dropped; region: keys differ, dropped.
        "score": 0.6,                           # numbers other than integers follow the same rules
        "shards": [{"name": "s0", "ready": True}, {"name": "s1", "ready": True}, {"name": "s2", "ready": True}],
        "summary": {"engine": "postgres", "ready": 1, "total": 2},   # maps with the same keys recurse
    }


def test_lists_of_different_lengths_are_dropped() -> None:
    eu = database("Ready", "db.example.com", 2, 3, True)
    us = database("Ready", "db.example.com", 2, 2, True)
    result = aggregate([eu, us])
    assert result is not None
    assert "shards" not in result
    assert result["endpoints"] == [{"host": "db.example.com", "port": 5432}]
    assert result["phase"] == "Ready"


def test_fields_of_different_kinds_are_dropped() -> None:
    assert aggregate([{"value": 3, "mode": "a", "flag": True}, {"value": "3", "mode": None, "flag": 1}]) == {}


def test_the_result_depends_on_the_statuses_not_their_order() -> None:
    statuses = [deployment_available(), deployment_rolling(), deployment_unavailable()]
    results = [aggregate(list(order)) for order in itertools.permutations(statuses)]
    assert all(r == results[0] for r in results)
    tied = [deployment_available(), deployment_available()]
    tied[1]["conditions"][0]["reason"] = "SameTimeOtherReason"
    assert aggregate(tied) == aggregate(tied[::-1])


def test_a_pods_phase_is_the_least_advanced_of_its_clusters() -> None:
    running, pending = {"phase": "Running", "podIP": "10.0.0.1"}, {"phase": "Pending"}
    assert aggregate([running, pending]) == {"phase": "Pending"}  # the IPs differ in shape: left out
    assert aggregate([running, {"phase": "Running"}])["phase"] == "Running"  # type: ignore[index]
    assert aggregate([running, {"phase": "Failed"}, pending])["phase"] == "Failed"  # type: ignore[index]
    assert aggregate([{"phase": "Succeeded"}, running])["phase"] == "Running"  # type: ignore[index]
    assert aggregate([{"phase": "Bound"}, {"phase": "Pending"}]) == {}  # not a Pod's: disagreement is left out
