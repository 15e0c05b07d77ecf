"""Pure parts of the simulator: pod and node table cells, hashes and counts, rules and faults parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apiserver.builtin.clusterkinds import node_columns, pod_columns, qos_class
from sim.controllers.jobs import compress_indexes
from sim.controllers.statusrules import RuleError, load_rules, parse_rules
from sim.controllers.util import fenceposts, pod_requests, set_condition, template_hash
from sim.faults import FaultError, Faults, cluster_of
from sim.server import per_cluster
from sim.workers import auto_processes, parse_processes, slices

REPO = Path(__file__).resolve().parents[2]

JUNK: list[Any] = [
    {}, {"metadata": None}, {"spec": "x", "status": 3}, {"status": {"conditions": "x", "containerStatuses": "y"}},
    {"status": {"containerStatuses": [None, 1, {"state": "x"}, {"state": {"terminated": "x"}}]}},
    {"status": {"initContainerStatuses": [{"state": {"terminated": {"exitCode": "1"}}}]},
     "spec": {"initContainers": [{}]}},
    {"spec": {"containers": [None, {"name": 1}], "readinessGates": [{"conditionType": None}]},
     "status": {"podIPs": [None]}},
    {"metadata": {"labels": ["x"], "deletionTimestamp": 5, "creationTimestamp": "yesterday"}},
    {"status": {"addresses": [None, {"type": "InternalIP"}], "nodeInfo": "x"}, "spec": {"unschedulable": "yes"}},
]


@pytest.mark.parametrize("obj", JUNK)
def test_cells_never_raise_on_partial_objects(obj: Any) -> None:
    cells = [column.cell(obj) for column in (*pod_columns(), *node_columns())]
    # Strings as kubectl prints them: never the junk itself (a list, a dict, None) passed through.
    assert all(isinstance(cell, str) for cell in cells), cells


def test_cells_of_an_empty_pod_and_node_are_kubectls_placeholders() -> None:
    assert {c.name: c.cell({}) for c in pod_columns()} == {
        "Name": "", "Ready": "0/0", "Status": "", "Restarts": "0", "Age": "<unknown>", "IP": "<none>",
        "Node": "<none>", "Nominated Node": "<none>", "Readiness Gates": "<none>"}
    assert {c.name: c.cell({}) for c in node_columns()} == {
        "Name": "", "Status": "Unknown", "Roles": "<none>", "Age": "<unknown>", "Version": "",
        "Internal-IP": "<none>", "External-IP": "<none>", "OS-Image": "<unknown>", "Kernel-Version": "<unknown>",
        "Container-Runtime": "<unknown>"}
    # A container that is not an object is skipped; one with a junk name still counts.
    junk = {"spec": {"containers": [None, {"name": 1}], "readinessGates": [{"conditionType": None}]},
            "status": {"podIPs": [None]}}
    assert (_cells(junk)["Ready"], _cells(junk)["Readiness Gates"], _cells(junk)["IP"]) == ("0/1", "0/1", "<none>")


def _cells(obj: dict[str, Any]) -> dict[str, Any]:
    return {c.name: c.cell(obj) for c in pod_columns()}


def test_pod_cells_follow_the_printer() -> None:
    running = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
               "status": {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                          "conditions": [{"type": "Ready", "status": "False"}],
                          "containerStatuses": [
                              {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}}},
                              {"name": "b", "ready": False, "restartCount": 1,
                               "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    cells = _cells(running)
    assert (cells["Ready"], cells["Status"], cells["Restarts"], cells["IP"], cells["Node"]) == (
        "1/2", "CrashLoopBackOff", "3", "10.0.0.5", "n1")
    completed = {"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded", "containerStatuses": [
        {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    assert (_cells(completed)["Status"], _cells(completed)["Ready"]) == ("Completed", "0/1")
    pending = {"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}}
    assert (_cells(pending)["Status"], _cells(pending)["Node"], _cells(pending)["IP"]) == ("Pending", "<none>",
                                                                                           "<none>")
    assert _cells({**pending, "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})["Status"] == "Terminating"
    init = {"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [{"state": {"running": {}}}]}}
    assert _cells(init)["Status"] == "Init:0/1"


def test_node_cells() -> None:
    node = {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "x"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "nodeInfo": {"kubeletVersion": "v1"},
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}]}}
    cells = {c.name: c.cell(node) for c in node_columns()}
    assert (cells["Status"], cells["Roles"], cells["Version"], cells["Internal-IP"], cells["External-IP"]) == (
        "NotReady,SchedulingDisabled", "control-plane,x", "v1", "172.18.0.2", "<none>")
    assert {c.name: c.cell({}) for c in node_columns()}["Status"] == "Unknown"


def test_qos_class_and_requests() -> None:
    assert qos_class({"containers": [{"name": "a"}]}) == "BestEffort"
    limits = {"cpu": "1", "memory": "1Gi"}
    assert qos_class({"containers": [{"resources": {"limits": limits}}]}) == "Guaranteed"
    assert qos_class({"containers": [{"resources": {"requests": {"cpu": "500m"}}}]}) == "Burstable"
    spec = {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                           {"resources": {"limits": {"cpu": "1"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "4"}}}]}
    requests = pod_requests(spec)
    assert (requests.pods, requests.cpu_milli, requests.memory) == (1, 4000, 2**30)


def test_template_hash_and_fenceposts() -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "a", "image": "i"}]}}
    h = template_hash(template)
    assert h == template_hash({"spec": template["spec"], "metadata": template["metadata"]})
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(h) <= 10
    assert template_hash(template, collision_count=1) != h
    assert fenceposts({"maxSurge": "25%", "maxUnavailable": "25%"}, 4) == (1, 1)
    assert fenceposts({"maxSurge": "25%", "maxUnavailable": "25%"}, 3) == (1, 0)
    assert fenceposts({"maxSurge": 0, "maxUnavailable": 0}, 3) == (0, 1)


def test_conditions_keep_their_transition_time() -> None:
    old = [{"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": "t0"}]
    assert set_condition(old, {"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": "t1"}) \
        is old
    moved = set_condition([*old, {"type": "Progressing", "status": "True"}],
                          {"type": "Available", "status": "True", "reason": "B", "lastTransitionTime": "t1"})
    assert [c["type"] for c in moved] == ["Progressing", "Available"] and moved[1]["lastTransitionTime"] == "t0"


def test_compress_indexes() -> None:
    assert compress_indexes(set()) == ""
    assert compress_indexes({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def test_status_rules() -> None:
    rules = load_rules(REPO / "sim" / "example-status-rules.yaml")
    pool = next(r for r in rules if r.kind == "WorkerPool")
    obj = {"kind": "WorkerPool", "metadata": {"generation": 3}, "spec": {"replicas": 5}}
    assert not pool.satisfied(obj)
    assert pool.apply(obj)["status"] == {"replicas": 5, "readyReplicas": 5, "observedGeneration": 3,
                                         "phase": "Ready"}
    assert pool.satisfied(obj)
    (const,) = parse_rules([{"kind": "K", "set": {".status.a": {"const": ".x"}, ".status.b": ".spec.missing"}}])
    assert const.apply({})["status"] == {"a": ".x"}
    for bad, message in [
        ({"kind": "K", "set": {".spec.a": 1}}, "under .status"),
        ({"kind": "K", "set": {".status.a[0]": 1}}, "plain field path"),
        ({"kind": "K", "set": {}, "delaySeconds": -1}, "delaySeconds"),
        ({"kind": "K", "set": {}, "extra": 1}, "unknown field"),
        ({"set": {}}, "needs kind"),
    ]:
        with pytest.raises(RuleError, match=message):
            parse_rules([bad])


def test_faults_parsing() -> None:
    assert Faults.from_json({}) == Faults()
    assert Faults.from_json({"refuse": True, "latencySeconds": 1, "failWrites": True}).to_json() == {
        "refuse": True, "latencySeconds": 1.0, "failWrites": True}
    for bad in ([], {"refuse": 1}, {"latencySeconds": -1}, {"latencySeconds": True}, {"slow": 1},
                {"latencySeconds": float("inf")}):
        with pytest.raises(FaultError):
            Faults.from_json(bad)
    assert cluster_of("/clusters/wec1/api/v1/pods") == "wec1"
    assert cluster_of("/clusters/wec1") == "wec1"
    assert cluster_of("/sim/v1/clusters") is None


def test_per_cluster_values() -> None:
    assert per_cluster(["8", "wec2=16"], ["wec1", "wec2"], "4", str, "--node-cpu") == ("8", {"wec2": "16"})
    assert per_cluster([], ["wec1"], 2, int, "--nodes-per-cluster") == (2, {})
    with pytest.raises(SystemExit, match="no cluster 'wec3'"):
        per_cluster(["wec3=1"], ["wec1"], 2, int, "--nodes-per-cluster")


def test_clusters_are_split_into_contiguous_even_slices_one_per_process() -> None:
    names = [f"wec{i}" for i in range(1, 8)]
    assert slices(names, 3) == [["wec1", "wec2", "wec3"], ["wec4", "wec5"], ["wec6", "wec7"]]
    assert slices(names, 1) == [names]
    assert parse_processes("5", 2) == 2  # never more processes than clusters
    assert auto_processes(10) == 1
    assert 1 <= auto_processes(1000) <= 4
    with pytest.raises(ValueError):
        parse_processes("0", 10)
