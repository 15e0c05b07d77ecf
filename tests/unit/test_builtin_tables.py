"""Server-side tables of the built-in kinds: kubectl's columns, cells from partial objects, ages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimachinery.durations import age
from apiserver.builtin.kinds import builtin_types
from apiserver.builtin.tables.columns import default_columns
from spaces.kind import space_types
from tests.builtin_objects import api_service, create, deployment, rtype


def test_deployment_table_has_upstream_columns_including_wide_ones() -> None:
    columns = rtype("Deployment").columns
    assert [c.name.upper() for c in columns] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE",
                                                 "CONTAINERS", "IMAGES", "SELECTOR"]
    assert [c.name for c in columns if c.priority == 1] == ["Containers", "Images", "Selector"]
    assert columns[0].format == "name"


def test_deployment_row_renders_like_kubectl() -> None:
    created = (datetime.now(UTC) - timedelta(minutes=3, seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = deployment(selector={"matchLabels": {"app": "web"},
                               "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]})
    obj["metadata"]["creationTimestamp"] = created
    obj["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "envoy:1"})
    obj["status"] = {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}
    cells = [c.cell(obj) for c in rtype("Deployment").columns]
    assert cells == ["web", "1/2", 2, 1, "3m2s", "web,sidecar", "nginx:1.27,envoy:1", "app=web,tier in (a,b)"]


@pytest.mark.parametrize("obj", [
    {},
    {"metadata": None, "spec": "x", "status": []},
    {"spec": {"template": {"spec": {"containers": [None, 3]}}, "replicas": "3"}, "status": {"x": 1}},
])
def test_no_table_cell_raises_on_partial_or_malformed_objects(obj: dict[str, Any]) -> None:
    for t in (*builtin_types(), *space_types()):
        cells = [column.cell(obj) for column in t.columns]
        # A table cell is a JSON scalar (kube's TableRow): a raw list, dict or None leaking from a malformed
        # object would break kubectl's printer.
        assert all(type(cell) in (str, int, float, bool) for cell in cells), (t.kind, cells)
        assert cells[0] == ("<unknown>" if t.kind == "Event" else ""), (t.kind, cells[0])  # no name: empty


def test_a_malformed_deployment_renders_defaults_not_its_junk() -> None:
    junk = {"spec": {"template": {"spec": {"containers": [None, 3]}}, "replicas": "3"}, "status": {"x": 1}}
    cells = {c.name: c.cell(junk) for c in rtype("Deployment").columns}
    assert cells == {"Name": "", "Ready": "0/0", "Up-to-date": 0, "Available": 0, "Age": "<unknown>",
                     "Containers": "", "Images": "", "Selector": ""}


def test_every_table_starts_with_name_except_events_which_start_with_last_seen() -> None:
    for t in (*builtin_types(), *space_types()):
        first = t.columns[0].name
        assert first == ("Last Seen" if t.kind == "Event" else "Name"), t.kind


def test_kinds_without_a_printer_show_created_at_as_a_date() -> None:
    for kind in ("Role", "ClusterRole", "LimitRange", "CustomResourceDefinition"):
        columns = rtype(kind).columns
        assert [(c.name, c.type) for c in columns] == [("Name", "string"), ("Created At", "date")]
        created = {"metadata": {"creationTimestamp": "2024-05-01T10:00:00Z"}}
        assert columns[1].cell(created) == "2024-05-01T10:00:00Z"


def test_default_columns_are_name_and_age() -> None:
    assert [c.name for c in default_columns()] == ["Name", "Age"]


def test_service_row_shows_cluster_ip_and_node_ports() -> None:
    svc = create("Service", {"metadata": {"name": "web"},
                             "spec": {"type": "NodePort", "selector": {"app": "web"},
                                      "ports": [{"port": 80, "nodePort": 30080}]}})
    cells = {c.name: c.cell(svc) for c in rtype("Service").columns}
    assert cells["Type"] == "NodePort"
    assert cells["Cluster-IP"] == svc["spec"]["clusterIP"]
    assert cells["External-IP"] == "<none>"
    assert cells["Port(s)"] == "80:30080/TCP"
    assert cells["Selector"] == "app=web"


def test_event_row_names_the_involved_object_and_defaults_count_to_one() -> None:
    event = {"metadata": {"name": "web.17a"}, "type": "Normal", "reason": "Scheduled", "message": " ok \n",
             "involvedObject": {"kind": "Pod", "name": "web-1"}, "source": {"component": "scheduler"}}
    cells = {c.name: c.cell(event) for c in rtype("Event").columns}
    assert (cells["Object"], cells["Message"], cells["Count"], cells["Source"]) == ("pod/web-1", "ok", 1,
                                                                                    "scheduler")


def test_job_row_reports_completion_from_conditions() -> None:
    done = {"spec": {"completions": 3}, "status": {"succeeded": 3, "conditions": [
        {"type": "Complete", "status": "True"}], "startTime": "2024-01-01T00:00:00Z",
        "completionTime": "2024-01-01T00:01:05Z"}}
    cells = {c.name: c.cell(done) for c in rtype("Job").columns}
    assert (cells["Status"], cells["Completions"], cells["Duration"]) == ("Complete", "3/3", "65s")


@pytest.mark.parametrize(("seconds", "shown"), [(5, "5s"), (119, "119s"), (182, "3m2s"), (600, "10m"),
                                                (3 * 3600 + 300, "3h5m"), (9 * 3600, "9h"),
                                                (2 * 86400 + 3 * 3600, "2d3h"), (30 * 86400, "30d"),
                                                (3 * 365 * 86400, "3y"), (-1, "0s"), (-5, "<invalid>")])
def test_age_is_kubectls_human_duration(seconds: int, shown: str) -> None:
    now = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
    created = (now - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age(created, now) == shown


def test_age_without_a_timestamp_is_unknown() -> None:
    assert age(None) == "<unknown>"
    assert age("not a time") == "<unknown>"




def test_api_service_row_shows_its_service_and_availability_like_kubectl() -> None:
    columns = rtype("APIService").columns
    remote = create("APIService", api_service())
    assert [c.cell(remote) for c in columns][1:3] == ["my-namespace/my-service", "Unknown"]
    remote["status"] = {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]}
    assert columns[2].cell(remote) == "False (ServiceNotFound)"
    local = create("APIService", api_service(service=None))
    local["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}
    assert [c.cell(local) for c in columns][1:3] == ["Local", "True"]
